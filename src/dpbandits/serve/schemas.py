"""Request bodies of the HTTP API (pydantic models: validated, unknown fields refused, documented in OpenAPI)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dpbandits.serve.kinds import MAX_DIMENSION, Feedback

__all__ = ["CreateExperiment", "SampleRequest", "TellRequest"]


class CreateExperiment(BaseModel):
    """Create an experiment of a registered kind (``GET /v1/kinds`` lists them and their parameters)."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(max_length=64, description="A registered kind, e.g. 'dp-bai', 'dp-ebs-elimination', 'kl-mab'.")
    name: str = Field("", max_length=200, description="A label for the status page.")
    params: dict[str, Any] = Field(default_factory=dict, description="The kind's parameters (see /v1/kinds).")
    epsilon_budget: float | None = Field(
        None, gt=0, allow_inf_nan=False,
        description="ε budget of the experiment; required for sampling kinds (usca, kl-mab).")
    delta_budget: float = Field(0.0, ge=0, lt=1, description="δ at which the budget is checked.")
    insecure_seed: int | None = Field(
        None, ge=0, le=2**32 - 1,
        description="Seeded NumPy noise (NOT private): accepted only by a server started with "
                    "--allow-insecure-seeded-noise, for tests that replay a run.")


class TellRequest(Feedback):
    """The ticket returned by ask and the feedback of its step."""

    ticket: str = Field(max_length=200, description="The ticket returned by ask.")

    def feedback(self) -> Feedback:
        """The feedback fields alone."""
        return Feedback.model_validate(self.model_dump(exclude={"ticket"}))


class SampleRequest(BaseModel):
    """Draw private samples: KL-offline actions, or USCA recommendations at a context."""

    model_config = ConfigDict(extra="forbid")

    size: int = Field(1, ge=1, le=1000, description="Number of samples; each spends the guarantee once.")
    context: list[float] | None = Field(None, max_length=MAX_DIMENSION, description="USCA: the context c.")
