#!/usr/bin/env python3
"""Verifies verdict tokens of attest-gateway with PyJWT + cryptography, exactly as the Python snippet
of Config/REFERENCE.md ("Verifying a token") does: the snippet's code block is read from the file
and executed as written, then its verify_verdict() is called for each request.

    verify_verdict_token.py REFERENCE.md verify < requests.jsonl
        stdin: one JSON object per line {"token", "method", "target", "body_b64"}; the snippet reads
        VERDICT_JWKS_URL, VERDICT_SECRET_IDS and VERDICT_SECRET_<kid> from the environment.
        stdout: one JSON object per line: {"ok": true, "kid": ..., "claims": {...}} or
        {"ok": false, "error": "<exception class>", "message": "..."}.
    verify_verdict_token.py REFERENCE.md thumbprints URL
        Fetches the JWKS at URL and prints {"keys": n, "mismatches": [...]}: every kid must be the
        RFC 7638 thumbprint of its key (computed here with hashlib, independently of the gateway).
"""
import base64
import hashlib
import json
import re
import sys
import urllib.request


def snippet(reference_path):
    text = open(reference_path, encoding="utf-8").read()
    match = re.search(r"<!-- verdict-snippet-python[^>]*-->\s*```python\n(.*?)```", text, re.S)
    if not match:
        raise SystemExit("no verdict-snippet-python block in " + reference_path)
    return match.group(1)


def verify(reference_path):
    namespace = {"__name__": "verdict_snippet"}
    exec(compile(snippet(reference_path), "REFERENCE.md snippet", "exec"), namespace)
    jwt = namespace["jwt"]
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        body = base64.b64decode(request.get("body_b64", ""))
        try:
            kid = jwt.get_unverified_header(request["token"]).get("kid")
        except Exception:
            kid = None
        try:
            claims = namespace["verify_verdict"](request["token"], request["method"], request["target"], body)
            print(json.dumps({"ok": True, "kid": kid, "claims": claims}), flush=True)
        except Exception as error:  # the snippet raises jwt.InvalidTokenError / PyJWKClientError
            print(json.dumps({"ok": False, "kid": kid, "error": type(error).__name__, "message": str(error)}), flush=True)


def thumbprints(url):
    document = json.load(urllib.request.urlopen(url, timeout=10))
    mismatches = []
    for key in document["keys"]:
        canonical = json.dumps({"crv": key["crv"], "kty": key["kty"], "x": key["x"], "y": key["y"]},
                               separators=(",", ":"), sort_keys=True)
        expected = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
        if expected != key["kid"]:
            mismatches.append({"kid": key["kid"], "expected": expected})
    print(json.dumps({"keys": len(document["keys"]), "mismatches": mismatches}))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[2] == "verify":
        verify(sys.argv[1])
    elif len(sys.argv) == 4 and sys.argv[2] == "thumbprints":
        thumbprints(sys.argv[3])
    else:
        raise SystemExit(__doc__)
