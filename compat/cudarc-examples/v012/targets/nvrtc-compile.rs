// cudarc 0.12.1's `examples/nvrtc-compile.rs`, as shipped. The target includes it rather than naming it,
// so that formatting this workspace never rewrites the upstream file.
include!("../examples/nvrtc-compile.rs");
