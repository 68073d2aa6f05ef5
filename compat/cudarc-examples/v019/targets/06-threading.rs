// cudarc 0.19.10's `examples/06-threading.rs`, as shipped. The target includes it rather than naming it,
// so that formatting this workspace never rewrites the upstream file.
include!("../examples/06-threading.rs");
