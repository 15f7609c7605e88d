"""Generate the Python stubs of proto/ into service/grpc_api/gen/: ``python -m service.grpc_api.stubs``.

The generated modules import each other as a package (``from . import``), so they load
as ``service.grpc_api.gen`` with no change to sys.path.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = ROOT / "proto"
PROTOS = ["ono99/v1/ono99.proto"]
GEN = Path(__file__).resolve().parent / "gen"


def generate(out: Path) -> list[Path]:
    """Run protoc (grpcio-tools) into ``out``; return the files written."""
    from grpc_tools import protoc

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        args = ["protoc", f"-I{PROTO_ROOT}", f"--python_out={tmp}", f"--pyi_out={tmp}", f"--grpc_python_out={tmp}",
                *PROTOS]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        written = []
        for path in sorted(Path(tmp).rglob("*.py*")):
            text = path.read_text()
            text = re.sub(r"^from ono99\.v1 import", "from . import", text, flags=re.M)
            target = out / path.name
            target.write_text(text)
            written.append(target)
    (out / "__init__.py").write_text('"""Generated from proto/ by service/grpc_api/stubs.py; do not edit."""\n')
    return written


if __name__ == "__main__":
    for path in generate(GEN):
        print(path.relative_to(ROOT))
    sys.exit(0)
