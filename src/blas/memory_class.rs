//! The device class some BLAS rules depend on: memory of at least [`FAST_MEMORY`] peak bandwidth
//! (an H200's 4.8 TB/s) or slower (an H100's 3.35 TB/s). Both are GH100 chips of 132 SMs; the
//! rules that differ between them were measured on each (GEMM's decode steps in
//! `gemm::skinny90`, the part counts on the wgmma tiles in `gemm::partials`, GEMV's row strips
//! split over a cluster in `gemv`).

/// Peak memory bandwidth (bytes per second) from which a device counts as fast.
pub(crate) const FAST_MEMORY: f64 = 4.0e12;

/// Whether a device of peak memory `bandwidth` (bytes per second; `None` where the driver did
/// not say) counts as fast.
pub(crate) fn fast_memory(bandwidth: Option<f64>) -> bool {
    bandwidth.is_some_and(|b| b >= FAST_MEMORY)
}

#[cfg(test)]
mod tests {
    use super::fast_memory;

    #[test]
    fn an_h200_is_fast_an_h100_and_an_unknown_device_are_not() {
        assert!(fast_memory(Some(4.8e12)));
        assert!(!fast_memory(Some(3.35e12)) && !fast_memory(None));
    }
}
