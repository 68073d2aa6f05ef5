// cudarc 0.12.1's `examples/03-launch-kernel.rs`, as shipped. The target includes it rather than naming it,
// so that formatting this workspace never rewrites the upstream file.
include!("../examples/03-launch-kernel.rs");
