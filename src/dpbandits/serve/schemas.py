"""Request bodies of the HTTP API (pydantic models: validated, unknown fields refused, documented in OpenAPI).

Every model is strict (``epsilon_budget: true`` or ``size: "3"`` is refused, not coerced) and every
text field refuses control characters and lone surrogates (:data:`Text`): a NUL in ``name`` is a
422 on every store, never stored and never a store error.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from dpbandits.serve.kinds import MAX_DIMENSION, Feedback
from dpbandits.serve.limits import check_text

__all__ = ["CreateExperiment", "SampleRequest", "TellRequest", "Text"]

Text = Annotated[str, AfterValidator(functools.partial(check_text, name="text"))]
"""A string without control characters (category Cc: NUL, escape codes...) or lone surrogates."""


class CreateExperiment(BaseModel):
    """Create an experiment of a registered kind (``GET /v1/kinds`` lists them and their parameters)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    kind: Text = Field(max_length=64, description="A registered kind, e.g. 'dp-bai', 'dp-ebs-elimination', 'kl-mab'.")
    name: Text = Field("", max_length=200, description="A label for the status page.")
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

    ticket: Text = Field(max_length=200, description="The ticket returned by ask.")

    def feedback(self) -> Feedback:
        """The feedback fields alone."""
        return Feedback.model_validate(self.model_dump(exclude={"ticket"}))


class SampleRequest(BaseModel):
    """Draw private samples: KL-offline actions, or USCA recommendations at a context."""

    model_config = ConfigDict(extra="forbid", strict=True)

    size: int = Field(1, ge=1, le=1000, description="Number of samples; each spends the guarantee once.")
    context: list[float] | None = Field(None, max_length=MAX_DIMENSION, description="USCA: the context c.")
