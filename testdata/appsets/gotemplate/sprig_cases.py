"""The function cases of tests/appsets/test_templatefuncs.py, for sprig and Argo CD's own
functions to answer.

Regenerate sprig-expected.json where Go and sprig v3.3.0's sources are at hand (the module proxy
need not be reachable: point go.mod at local copies):
    PYTHONPATH=. python3 testdata/appsets/gotemplate/sprig_cases.py /tmp/sprig.json
    cd testdata/appsets/gotemplate/gen
    go mod edit -require=github.com/Masterminds/sprig/v3@v3.3.0 \\
        -replace=github.com/Masterminds/sprig/v3=/path/to/sprig   # and its requirements alike
    go run -tags sprig . /tmp/sprig.json > ../sprig-expected.json
The file in the repository was made with Go 1.19.8 and sprig v3.3.0 (dario.cat/mergo v1.0.1,
Masterminds/semver v3.3.0, spf13/cast v1.7.0, goutils v1.1.1, shopspring/decimal v1.4.0,
huandu/xstrings v1.4.0), sprig's crypto.go cut to its hash and uuid functions (golang.org/x/crypto
was not at hand) and camelcase left out (xstrings v1.4.0 lacks ToPascalCase). Argo CD's own
functions (gen/argo.go) run on sigs.k8s.io/yaml v1.4.0 and gosimple/slug v1.15.0, the libraries
applicationset/utils calls. Random functions, and those gitdrift refuses, are left out.
"""

import json
import sys
from pathlib import Path

from kubectl_gitdrift.appsets.templatefuncs import UNSUPPORTED
from tests.appsets.test_templatefuncs import CASES, DATA, ERRORS, WILD, WILD_CASES


def main() -> None:
    pairs = [(t, DATA) for t, _ in CASES + ERRORS] + [(t, WILD) for t, _ in WILD_CASES]
    cases = [
        {"name": f"case {i}", "template": template, "data": data}
        for i, (template, data) in enumerate(pairs)
        if not any(name in template for name in [*UNSUPPORTED, "uuidv4", "rand"])
    ]
    Path(sys.argv[1]).write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
