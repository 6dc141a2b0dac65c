#!/usr/bin/env python3
"""Parse Terraform files with HashiCorp's HCL parser (pygohcl wraps hashicorp/hcl).

Used by .ci/run on the files `gpuplan render` writes; exits 1 naming any file that does not
parse, and requires each to declare at least one resource.
"""
import sys

import pygohcl


def main(paths):
    bad = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            doc = pygohcl.loads(text)
        except Exception as e:  # pygohcl raises its own parse error type
            print(f"{path}: {e}", file=sys.stderr)
            bad += 1
            continue
        resources = doc.get("resource", {})
        if not resources:
            print(f"{path}: no resource blocks", file=sys.stderr)
            bad += 1
            continue
        count = sum(len(v) for v in resources.values())
        print(f"{path}: parsed, {count} resource(s): {', '.join(sorted(resources))}")
    print(f"hcl: {len(paths) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
