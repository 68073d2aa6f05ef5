// cudarc 0.19.10's `examples/13-copy-multi-gpu.rs`, as shipped. The target includes it rather than naming it,
// so that formatting this workspace never rewrites the upstream file.
include!("../examples/13-copy-multi-gpu.rs");
