"""Writes the strict JSON schemas of one Kubernetes version out of kubernetes-validate's wheel, for kubeconform.

Usage: extract-schemas.py WHEEL VERSION OUT_DIR (VERSION like 1.33.0). The wheel's schemas carry an
"$id" under https://kubernetes.io/api/ and refer to their shared definitions as
"/api/_definitions.json", which resolves to that site. kubeconform compiles each schema from its file
and loads what it refers to from files only, so the "$id" goes and the reference becomes the sibling
file "_definitions.json". Nothing else changes.
"""
import json
import os
import sys
import zipfile

wheel, version, out = sys.argv[1:4]
prefix = f"kubernetes_validate/kubernetes-json-schema/v{version}-local-strict/"
with zipfile.ZipFile(wheel) as archive:
    names = [name for name in archive.namelist() if name.startswith(prefix) and name.endswith(".json")]
    if not names:
        sys.exit(f"{wheel} has no schemas for Kubernetes {version}")
    os.makedirs(out, exist_ok=True)
    for name in names:
        schema = json.loads(archive.read(name).decode("utf-8").replace('"/api/_definitions.json#', '"_definitions.json#'))
        schema.pop("$id", None)
        with open(os.path.join(out, name[len(prefix):]), "w", encoding="utf-8") as file:
            json.dump(schema, file)
print(f"{len(names)} schemas of Kubernetes {version} in {out}")
