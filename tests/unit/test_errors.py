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


@pytest.mark.parametrize(("module", "call"), [
    ("dpbandits.envs.kernel", lambda m: m._sklearn_kernels()),
    ("dpbandits.envs.datasets", lambda m: m._loader("iris")),
])
def test_missing_extra_advice_works_from_an_index_and_from_a_clone(module: str, call: object,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # "dpbandits[ml]" names the distribution on an index; a clone installs ".[ml]" from its root
    import importlib
    import sys

    for name in ("sklearn", "sklearn.gaussian_process", "sklearn.datasets"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails, as without the extra
    with pytest.raises(errors.DependencyNotInstalledError) as raised:
        call(importlib.import_module(module))  # type: ignore[operator]
    assert 'pip install "dpbandits[ml]"' in str(raised.value)
    assert 'pip install ".[ml]"' in str(raised.value)
