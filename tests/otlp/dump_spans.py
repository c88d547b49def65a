"""A rotel trace processor that appends every received span to $SPANS_JSONL, one JSON object per
line: hex ids ("" for a root's parent), name, kind, scope, resource attributes, typed attributes
(int, float, bool, str, lists), events and status.

rotel runs it inside its embedded Python (3.11) as `--otlp-with-trace-processor`. It must never
raise: an exception inside `process_spans` makes rotel panic and exit, so every step is guarded
and a span that cannot be converted is written with an "error" field instead.
"""

import json
import os
import threading

_LOCK = threading.Lock()
_MAX_ITEMS = 10_000


def _items(seq):
    """Iterates rotel's list-like wrappers, whether or not they support iter() or len()."""
    if seq is None:
        return []
    try:
        return list(seq)
    except Exception:
        pass
    out = []
    for i in range(_MAX_ITEMS):
        try:
            out.append(seq[i])
        except Exception:
            break
    return out


def _value(any_value):
    """A Python value of an OTLP AnyValue (or of the primitive rotel already unwrapped)."""
    if any_value is None:
        return None
    value = getattr(any_value, "value", any_value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return value.hex()
    entries = _items(value)
    if entries and all(hasattr(e, "key") for e in entries):
        return {e.key: _value(e.value) for e in entries}
    return [_value(e) for e in entries]


def _attributes(kvs):
    out = {}
    for kv in _items(kvs):
        try:
            out[kv.key] = _value(kv.value)
        except Exception as exc:  # keep the others
            out[getattr(kv, "key", "?")] = f"<unreadable: {exc}>"
    return out


def _hex(raw):
    if raw is None:
        return ""
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw).hex()
    return str(raw)


def _int(value):
    try:
        return int(value)
    except Exception:
        return str(value)


def _span(span, scope, resource):
    status = getattr(span, "status", None)
    return {
        "trace_id": _hex(span.trace_id),
        "span_id": _hex(span.span_id),
        "parent_span_id": _hex(span.parent_span_id),
        "name": span.name,
        "kind": _int(span.kind),
        "start_time_unix_nano": _int(span.start_time_unix_nano),
        "end_time_unix_nano": _int(span.end_time_unix_nano),
        "scope": scope,
        "resource": resource,
        "attributes": _attributes(span.attributes),
        "events": [
            {"name": e.name, "time_unix_nano": _int(e.time_unix_nano), "attributes": _attributes(e.attributes)}
            for e in _items(span.events)
        ],
        "status": {
            "code": _int(getattr(status, "code", 0)) if status is not None else 0,
            "message": getattr(status, "message", "") if status is not None else "",
        },
    }


def _write(lines):
    path = os.environ.get("SPANS_JSONL")
    if not path or not lines:
        return
    with _LOCK:
        with open(path, "a", encoding="utf-8") as out:
            for line in lines:
                out.write(line + "\n")


def process_spans(resource_spans):
    lines = []
    try:
        resource = getattr(resource_spans, "resource", None)
        resource_attrs = _attributes(resource.attributes) if resource is not None else {}
        for scope_spans in _items(resource_spans.scope_spans):
            scope_obj = getattr(scope_spans, "scope", None)
            scope = {
                "name": getattr(scope_obj, "name", "") if scope_obj is not None else "",
                "version": getattr(scope_obj, "version", "") if scope_obj is not None else "",
            }
            for span in _items(scope_spans.spans):
                try:
                    record = _span(span, scope, resource_attrs)
                except Exception as exc:
                    record = {"name": getattr(span, "name", "?"), "error": repr(exc)}
                try:
                    lines.append(json.dumps(record, ensure_ascii=False))
                except Exception as exc:
                    lines.append(json.dumps({"name": record.get("name"), "error": repr(exc)}))
    except Exception as exc:
        lines.append(json.dumps({"name": "<batch>", "error": repr(exc)}))
    try:
        _write(lines)
    except Exception:
        pass
