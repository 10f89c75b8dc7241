#!/usr/bin/env python3
"""Copies the fitted models of a calibrated topology into presets, citing where they come from.

  tools/paste-fitted.py [--keys REGEX] CALIBRATED.json "COMMAND" PRESET.json [PRESET.json ...]

With --keys, only the fitted models whose key matches REGEX (re.search) are written into each
preset, beside the ones it has, with the kernel transitions by kinds and weight format one of
whose GEMM sides matches REGEX ("rmsnorm>gemm:int4" for "^gemm:int4"), and nothing else of it
changes: how a calibration of other weight formats or attention forms (tools/heldout-fidelity.sh
SPLIT=lowbit) adds its fits to the presets without replacing the fits, launch gap and transitions
of another. Otherwise each preset gets "calibration": {"fitted": ..., "launch_gap_us": ...,
"transition_us": ...} (the fitted models, the measured launch gap and the kernel transitions by
kind pair, "gemm>act", and by kinds with the GEMMs' weight formats, "gemm:bf16>act": what belongs
to the GPU, not to the calibration traces' shapes; other calibration fields are kept),
every model's "source" set to "measured on <device> by eaglesim calibrate, <date>, <COMMAND>", and
is written back in the canonical layout topology_to_string writes (tests: PresetsAreInCanonicalForm).
"""
import datetime
import json
import re
import sys


def flat(v):
    # topology.cpp is_flat: scalars, and arrays of numbers, number arrays or objects of scalars.
    if not isinstance(v, (dict, list)):
        return True
    if isinstance(v, dict):
        return False
    def number(e):
        return isinstance(e, (int, float)) and not isinstance(e, bool)
    for e in v:
        point = isinstance(e, dict) and all(not isinstance(m, (dict, list)) for m in e.values())
        if not number(e) and not (isinstance(e, list) and all(number(x) for x in e)) and not point:
            return False
    return True


def compact(v):
    if isinstance(v, dict):
        return "{" + ", ".join(json.dumps(k, ensure_ascii=False) + ": " + compact(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(compact(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


def emit(v, indent=0):
    if indent > 0 and flat(v):
        return compact(v)
    if not v:
        return "{}" if isinstance(v, dict) else "[]"
    pad = " " * (indent + 2)
    if isinstance(v, dict):
        items = [pad + json.dumps(k, ensure_ascii=False) + ": " + emit(x, indent + 2) for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    return "[\n" + ",\n".join(pad + emit(x, indent + 2) for x in v) + "\n" + " " * indent + "]"


def main():
    args = sys.argv[1:]
    keys = None
    if len(args) >= 2 and args[0] == "--keys":
        try:
            keys = re.compile(args[1])
        except re.error as e:
            print(f"--keys: not a regular expression ({e}): {args[1]}", file=sys.stderr)
            return 2
        args = args[2:]
    if len(args) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cal = json.load(open(args[0]))
    fitted = cal.get("calibration", {}).get("fitted")
    if not fitted:
        print(f"{args[0]}: calibration.fitted: missing (not a topology written by eaglesim calibrate?)", file=sys.stderr)
        return 2
    if keys is not None:
        fitted = {k: v for k, v in fitted.items() if keys.search(k)}
        if not fitted:
            print(f"--keys {keys.pattern}: no fitted model of {args[0]} matches", file=sys.stderr)
            return 2
    device = "1 x " + cal["gpu"]["name"]
    m = re.search(r"calibrated on ([^)]*)$", cal.get("description", ""))
    if m:
        device = m.group(1)
    source = f"measured on {device} by eaglesim calibrate, {datetime.date.today().isoformat()}, {args[1]}"
    for key in fitted:
        fitted[key]["source"] = source
    measured = cal["calibration"]
    # Kind pairs ("gemm>act") and kinds with weight formats ("gemm:bf16>act"), not the shape keys
    # ("gemm:4096:4096:bf16>act:14336", a side with an all-digit field): those belong to the
    # calibration traces' shapes.
    def shape_key(key):
        return any(any(f.isdigit() for f in side.split(":")[1:]) for side in key.split(">"))
    transitions = {k: v for k, v in measured.get("transition_us", {}).items() if not shape_key(k)}
    # With --keys: the weight-format entries with a side among the pasted fits' formats.
    added = {} if keys is None else {
        k: v for k, v in transitions.items() if any(":" in side and keys.search(side) for side in k.split(">"))}
    for path in args[2:]:
        preset = json.load(open(path))
        if keys is not None:
            calibration = preset.setdefault("calibration", {})
            merged = dict(calibration.get("fitted", {}))
            merged.update(fitted)
            calibration["fitted"] = dict(sorted(merged.items()))
            if added:
                calibration["transition_us"] = dict(sorted({**calibration.get("transition_us", {}), **added}.items()))
            # One note per set of keys: a later paste of the same keys replaces the earlier note.
            names = ', '.join(fitted)
            head = names + (" and the kernel transitions with their weight formats: " if added else ": ")
            notes = [n for n in calibration.get("notes", "").split("; ")
                     if n and not n.startswith(names + ": ") and not n.startswith(names + " and ")]
            calibration["notes"] = "; ".join(notes + [head + source])
            # The order topology_to_string writes: fitted, notes, then the rest.
            preset["calibration"] = {"fitted": calibration.pop("fitted"), "notes": calibration.pop("notes"), **calibration}
            with open(path, "w") as f:
                f.write(emit(preset) + "\n")
            print(f"{path}: {len(fitted)} fitted models added ({', '.join(fitted)}), {len(merged)} in all; "
                  f"{len(added)} kernel transitions by weight format ({', '.join(added)})")
            continue
        calibration = preset.pop("calibration", {})
        for key in ("fitted", "launch_gap_us", "transition_us"):
            calibration.pop(key, None)
        calibration.pop("notes", None)
        gpu_facts = {}
        if "launch_gap_us" in measured:
            gpu_facts["launch_gap_us"] = measured["launch_gap_us"]
        if transitions:
            gpu_facts["transition_us"] = transitions
        # The order topology_to_string writes: fitted, notes, launch_gap_us, transition_us, the rest.
        preset["calibration"] = {"fitted": fitted, "notes": f"fitted, launch_gap_us, transition_us: {source}",
                                 **gpu_facts, **calibration}
        with open(path, "w") as f:
            f.write(emit(preset) + "\n")
        print(f"{path}: {len(fitted)} fitted models ({', '.join(fitted)}), {len(transitions)} kind-pair transitions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
