#!/usr/bin/env python3
"""Cut Karpenter's generated instance-type reference (built from EC2 DescribeInstanceTypes) to
its GPU and accelerator types and every AWS type in providers/aws/skus.toml, for the data tests:
tests/fixtures/data/karpenter-instance-types-2026-07-11.csv.

Usage: tools/karpenter-reference.py REFERENCE.md > tests/fixtures/data/karpenter-instance-types-2026-07-11.csv
REFERENCE.md is aws/karpenter-provider-aws website/content/en/preview/reference/instance-types.md
(commit 692ccdd0629e488300821443f0fa0bc3c3e08047, 2026-07-11, Apache-2.0). A maintainer's tool:
nothing in the build, the tests or the binary runs it."""
import re
import sys
import tomllib
from pathlib import Path

root = Path(__file__).resolve().parent.parent
wanted = {s["name"] for s in tomllib.loads((root / "providers/aws/skus.toml").read_text())["sku"]}
text = Path(sys.argv[1]).read_text()
types = {}
for block in re.split(r"^### `", text, flags=re.M)[1:]:
    name = block.split("`", 1)[0]
    cells = dict(re.findall(r"^\s*\|([^|]+)\|([^|]*)\|\s*$", block, flags=re.M))
    get = lambda k: cells.get(k, "").strip()
    accelerated = get("karpenter.k8s.aws/instance-gpu-count") or get("karpenter.k8s.aws/instance-accelerator-count")
    if name not in wanted and not accelerated:
        continue
    types[name] = [
        name,
        get("karpenter.k8s.aws/instance-cpu"),
        get("karpenter.k8s.aws/instance-memory"),
        get("karpenter.k8s.aws/instance-gpu-count") or get("karpenter.k8s.aws/instance-accelerator-count"),
        get("karpenter.k8s.aws/instance-gpu-name") or get("karpenter.k8s.aws/instance-accelerator-name"),
        get("karpenter.k8s.aws/instance-gpu-memory"),
        get("vpc.amazonaws.com/efa") or "0",
        get("kubernetes.io/arch"),
    ]
print("""# GPU and accelerator types, and the types of providers/aws/skus.toml, in Karpenter's generated instance-type reference, built from EC2 DescribeInstanceTypes:
# aws/karpenter-provider-aws website/content/en/preview/reference/instance-types.md, last changed 2026-07-11
# (commit 692ccdd0629e488300821443f0fa0bc3c3e08047), Apache-2.0. Columns: its labels instance-cpu, instance-memory (MiB),
# instance-gpu-count (or instance-accelerator-count), instance-gpu-name (or accelerator), instance-gpu-memory (MiB per GPU),
# the vpc.amazonaws.com/efa resource (EFA interfaces) and kubernetes.io/arch. Made by tools/karpenter-reference.py.""")
print("instance_type,vcpus,memory_mib,gpu_count,gpu_name,gpu_memory_mib,efa,arch")
for name in sorted(types):
    print(",".join(types[name]))
missing = sorted(wanted - set(types))
print(f"# catalog types not in the reference: {' '.join(missing) if missing else 'none'}")
