#!/usr/bin/env python3
"""Maintainer tool: copy the real price and spot-advisor data into providers/.

Not used at build, test or run time. Run from the repository root with the
shared data checkout beside it:  python3 tools/import-shared-data.py ../shared/data
Prices are copied verbatim (SkyPilot catalog rows). The AWS spot-advisor file is
cut down to the instance types gpuplan knows (providers/aws/skus.toml) and Linux,
keeping the original field names and values, so the binary does not embed 900 KB
of CPU instance data.
"""
import json
import pathlib
import re
import shutil
import sys

src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
dst = pathlib.Path("providers")
shutil.copyfile(src / "catalog/azure_gpu.csv", dst / "azure/prices.csv")
shutil.copyfile(src / "catalog/aws_gpu.csv", dst / "aws/prices.csv")

known = set(re.findall(r'^name = "([^"]+)"', (dst / "aws/skus.toml").read_text(), re.M))
advisor = json.loads((src / "aws/spot-advisor-data.json").read_text())
subset = {
    "global_rate": advisor["global_rate"],
    "ranges": advisor["ranges"],
    "instance_types": {k: v for k, v in sorted(advisor["instance_types"].items()) if k in known},
    "spot_advisor": {
        region: {"Linux": {k: v for k, v in sorted(oses.get("Linux", {}).items()) if k in known}}
        for region, oses in sorted(advisor["spot_advisor"].items())
    },
}
(dst / "aws/spot-advisor.json").write_text(json.dumps(subset, indent=1, sort_keys=False) + "\n")

# Newer dated tables (see providers/README.md "Newer price data"): copied verbatim; the loader
# decides per figure which one is newest.
shutil.copyfile(src / "aws/gpu-prices-2025-11-30.csv", dst / "aws/prices-2025-11-30.csv")
shutil.copyfile(src / "aws/ondemand-us-east-1-2026-07-20.csv", dst / "aws/ondemand-us-east-1-2026-07-20.csv")
shutil.copyfile(src / "azure/ondemand-gpu-2026-06-18.csv", dst / "azure/ondemand-2026-06-18.csv")
