// AttestCrypto module: see ../shared/DESIGN.md section 6 for what it owns.
