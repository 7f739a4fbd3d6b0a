"""quantity.canonical against the tables of apimachinery's quantity_test.go and Argo CD's tests."""

from __future__ import annotations

import pytest

from kubectl_gitdrift.compare.quantity import canonical, canonical_resource, is_quantity

# TestQuantityParse: input -> what Go's String() prints for the parsed value
PARSE = [
    ("0", "0"), ("0n", "0"), ("0u", "0"), ("0m", "0"), ("0Ki", "0"), ("0k", "0"), ("0Mi", "0"),
    ("0M", "0"), ("0Gi", "0"), ("0G", "0"), ("0Ti", "0"), ("0T", "0"), ("1", "1"),
    ("1Ki", "1Ki"), ("8Ki", "8Ki"), ("7Mi", "7Mi"), ("6Gi", "6Gi"), ("5Ti", "5Ti"), ("4Pi", "4Pi"),
    ("3Ei", "3Ei"), ("10Ti", "10Ti"), ("100Ti", "100Ti"),
    ("5n", "5n"), ("4u", "4u"), ("3m", "3m"), ("9", "9"), ("8k", "8k"), ("50k", "50k"),
    ("7M", "7M"), ("6G", "6G"), ("5T", "5T"), ("40T", "40T"), ("300T", "300T"), ("2P", "2P"),
    ("1E", "1E"),
    ("1E-3", "1E-3"), ("1e3", "1e3"), ("1E6", "1E6"), ("1e9", "1e9"), ("1E12", "1E12"),
    ("1e15", "1e15"), ("1E18", "1E18"),
    ("1e14", "100e12"), ("1e13", "10e12"), ("100.035k", "100.035k"),
    ("0.001", "1m"), ("0.0005k", "500m"), ("0.005", "5m"), ("0.05", "50m"), ("0.5", "500m"),
    ("0.00050k", "500m"), ("0.00500", "5m"), ("0.05000", "50m"), ("0.50000", "500m"),
    ("0.5e0", "500e-3"), ("0.5e-1", "50e-3"), ("0.5e-2", "5e-3"), ("10.035M", "10.035M"),
    ("1.2e3", "1200"), ("1.3E+6", "1300e3"), ("1.40e9", "1400e6"), ("1.53E12", "1530e9"),
    ("1.6e15", "1600e12"), ("1.7E18", "1700e15"),
    ("9.01", "9010m"), ("8.1k", "8100"), ("7.123456M", "7.123456M"),
    ("6.987654321G", "6.987654321G"), ("5.444T", "5.444T"), ("40.1T", "40100G"),
    ("300.2T", "300200G"), ("2.5P", "2500T"), ("1.01E", "1010P"),
    # things that saturate or round
    ("3.001n", "4n"), ("1.1E-9", "2e-9"), ("0.0000000001", "1n"), ("0.0000000005", "1n"),
    ("0.00000000050", "1n"), ("0.5e-9", "1e-9"), ("0.9n", "1n"), ("0.00000012345", "124n"),
    ("0.00000012354", "124n"), ("9Ei", "9223372036854775807"),
    ("9223372036854775807Ki", "9223372036854775807"), ("12E", "12E"),
    # fractional binary
    ("100.035Ki", "102435840m"), ("0.5Mi", "512Ki"), ("0.05Gi", "53687091200m"),
    ("0.025Ti", "27487790694400m"),
    # "things written by trolls"
    ("0.000000000001Ki", "2n"), (".001", "1m"), (".0001k", "100m"), ("1.", "1."), ("1.G", "1.G"),
]  # fmt: skip

# TestQuantityString: canonical strings are kept; alternates print as the canonical one
STRING = [
    ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("300Mi", "300Mi"), ("307200Ki", "300Mi"), ("6Ki", "6Ki"),
    ("1001Gi", "1001Gi"), ("1025024Mi", "1001Gi"), ("1Ti", "1Ti"), ("1024Gi", "1Ti"),
    ("5", "5"), ("5000m", "5"), ("500m", "500m"), ("0.5", "500m"), ("1G", "1G"), ("1000M", "1G"),
    ("0.001T", "1G"), ("1m", "1m"), ("1000u", "1m"), ("80m", "80m"), ("1080m", "1080m"),
    ("1.08", "1080m"), ("1080000000n", "1080m"), ("300M", "300M"), ("1T", "1T"),
    ("1234567M", "1234567M"), ("1234567m", "1234567m"), ("3k", "3k"), ("1025", "1025"),
    ("1e9", "1e9"), (".001e12", "1e9"), ("1e-3", "1e-3"), ("0.001e0", "1e-3"), ("1e-9", "1e-9"),
    ("1000e-12", "1e-9"), ("80e-3", "80e-3"), ("300e6", "300e6"), ("1e12", "1e12"), ("3e3", "3e3"),
    ("00", "0"), ("1n", "1n"), ("80n", "80n"), ("1080n", "1080n"), ("1u", "1u"), ("80u", "80u"),
    ("1080u", "1080u"),
]  # fmt: skip

# TestQuantityParseEmit
EMIT = [
    ("1Ki", "1Ki"), ("1Mi", "1Mi"), ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1000M", "1G"),
    (".001Ki", "1024m"), (".000001Ki", "1024u"), (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
]  # fmt: skip

# Argo CD (TestRemarshalResources, TestNormalize_MapField) and the cases named in the spec
ARGO = [
    (0.2, "200m"), ("0.2", "200m"), ("2000m", "2"), ("1000m", "1"), ("1.5Gi", "1536Mi"),
    ("100M", "100M"), (0.5, "500m"), (1, "1"), (0, "0"), (128974848, "128974848"),
    ("129e6", "129e6"), ("129M", "129M"), ("123Mi", "123Mi"), ("-1", "-1"), (".5", "500m"),
    ("5.", "5."), (1.5, "1500m"), (1000.0, "1k"), (2.0, "2"), (1e-07, "100e-9"),
    (" 1", "1"), ("1 ", "1"), ("+5", "+5"),
]  # fmt: skip

INVALID = [
    "",
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    "1Ei2",
]


@pytest.mark.parametrize(("value", "expected"), [*PARSE, *STRING, *EMIT, *ARGO])
def test_canonical(value: str | float, expected: str) -> None:
    assert canonical(value) == expected


@pytest.mark.parametrize(("value", "expected"), [(v, e) for v, e in PARSE + EMIT if e != "0"])
def test_negative(value: str, expected: str) -> None:
    """Upstream tries the negative of every parse case; the cached input keeps its sign."""
    assert canonical("-" + value) == "-" + expected


@pytest.mark.parametrize("value", INVALID)
def test_invalid(value: str) -> None:
    assert canonical(value) is None
    assert not is_quantity(value)


@pytest.mark.parametrize("value", [True, float("nan"), float("inf")])
def test_not_a_json_quantity(value: float) -> None:
    assert canonical(value) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0.1m", "1m"),  # the API server rounds ResourceList values up to milli precision
        ("5u", "1m"),
        ("3.001n", "1m"),
        ("9.01", "9010m"),
        ("-9.01", "-9010m"),
        ("1.0001", "1001m"),
        ("250m", "250m"),
        ("+5", "+5"),  # already at milli scale: Go keeps the cached string
        ("1Gi", "1Gi"),
        (0.2, "200m"),
    ],
)
def test_canonical_resource(value: str | float, expected: str) -> None:
    assert canonical_resource(value) == expected


def test_plain_parse_does_not_round_to_milli() -> None:
    """ParseQuantity only rounds to nano; the milli rounding is the ResourceList defaulter's."""
    assert canonical("0.1m") == "100u"


def test_is_quantity() -> None:
    assert is_quantity("250m")
    assert is_quantity(3)
    assert not is_quantity(None)
    assert not is_quantity(["1"])
