"""Install pinned packages into the running venv, with their dependency closure.

Usage (run by scripts/bench-python.sh with the venv's python):

    python install_pinned.py agentscope==2.0.11 langchain==1.5.0 ...

Why not a plain `pip install`: several current wheels (agentscope 2.0.11,
langchain-core 1.8.x) require certifi>=2026.10.19, and the package registry
reachable here may not carry a certifi that new yet, so pip's resolver gives
up on the whole set. This script installs every package with --no-deps and
walks the declared dependencies itself until nothing is missing, relaxing
only a certifi floor the registry cannot meet (certifi is the CA bundle; the
benchmarks make no network calls). Everything else keeps its declared
specifier; pip picks the newest release that matches.
"""

import subprocess
import sys
from importlib import metadata

from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "install",
       "-q", "--no-deps"]


def installed() -> dict:
    return {canonicalize_name(d.metadata["Name"]): d for d in metadata.distributions()}


def unmet(dists: dict) -> list[str]:
    """Requirements of installed distributions that nothing installed meets."""
    wanted: dict[str, Requirement] = {}
    extras_of: dict[str, set] = {}
    # Which extras each installed distribution was asked for.
    for dist in dists.values():
        for raw in dist.requires or []:
            req = Requirement(raw)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                extras_of.setdefault(canonicalize_name(req.name), set()).update(req.extras)
    for name, dist in dists.items():
        for raw in dist.requires or []:
            req = Requirement(raw)
            envs = [{"extra": e} for e in [""] + sorted(extras_of.get(name, ()))]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in envs):
                continue
            key = canonicalize_name(req.name)
            have = dists.get(key)
            if key == "certifi":
                if have is None:
                    wanted[key] = Requirement("certifi")
                continue
            if have is None or not req.specifier.contains(have.version, prereleases=True):
                wanted[key] = req
    return [f"{r.name}{r.specifier}" for r in wanted.values()]


def main() -> None:
    pins = sys.argv[1:]
    if not pins:
        sys.exit("usage: install_pinned.py NAME==VERSION ...")
    subprocess.run(PIP + pins, check=True)
    for _ in range(20):
        missing = unmet(installed())
        if not missing:
            return
        print("install_pinned: adding", " ".join(missing), flush=True)
        subprocess.run(PIP + missing, check=True)
    sys.exit(f"install_pinned: dependencies still missing after 20 rounds: {missing}")


if __name__ == "__main__":
    main()
