// AttestSimulator: a software App Attest device (`SoftwareDevice`) and test CA (`TestCA`) that mint
// attestation and assertion objects in Apple's exact formats under a TEST root (never Apple's), for
// tests, benchmarks and the gateway's quickstart. See ../shared/DESIGN.md section 6 and
// ../shared/vectors/README.md for the formats reproduced; shared/tools/ref_device.py is the
// independent Python counterpart (same CA folder layout, same key files, same byte layouts).
