from __future__ import annotations

import pytest

from dpbandits._core import errors


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (errors.InvalidParameterError, ValueError),
        (errors.InvalidActionError, ValueError),
        (errors.NotFittedError, RuntimeError),
        (errors.NotFittedError, AttributeError),  # as scikit-learn's: hasattr() and getattr(default) answer
        (errors.UnknownParameterError, TypeError),
        (errors.UnknownParameterError, ValueError),
        (errors.UnsupportedEventError, TypeError),
        (errors.DependencyNotInstalledError, ImportError),
        (errors.DataFormatError, ValueError),
    ],
)
def test_errors_are_catchable_as_dpbandits_and_builtin(error: type[Exception], builtin: type[Exception]) -> None:
    with pytest.raises(errors.DPBanditsError):
        raise error("x")
    with pytest.raises(builtin):
        raise error("x")


def test_every_exported_name_is_an_error_or_warning() -> None:
    for name in errors.__all__:
        obj = getattr(errors, name)
        assert issubclass(obj, errors.DPBanditsError | errors.DPBanditsWarning), name


def test_paper_variant_warning_is_a_privacy_warning() -> None:
    assert issubclass(errors.PaperVariantWarning, errors.PrivacyWarning)
    assert issubclass(errors.PrivacyWarning, UserWarning)
