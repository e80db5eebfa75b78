// AppAttest: pure App Attest verifier (DESIGN.md section 3).
