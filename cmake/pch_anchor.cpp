// Anchors the shared precompiled LibTorch header (target pln_pch).
