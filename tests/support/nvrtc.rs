//! Shared by the tests that run the real libnvrtc (no GPU needed).

/// Whether libnvrtc loads; prints why a test skips (and fails under `REQUIRE_NVRTC=1`).
pub fn nvrtc_or_skip(test: &str) -> bool {
    match cudrv::nvrtc::version() {
        Ok(_) => true,
        Err(e) => {
            assert!(std::env::var("REQUIRE_NVRTC").as_deref() != Ok("1"), "{test}: {e}");
            assert!(
                matches!(
                    e,
                    cudrv::Error::NoLibrary {
                        library: "libnvrtc",
                        ..
                    }
                ),
                "{e}"
            );
            println!("SKIPPED (no libnvrtc): {test}: {e}");
            false
        }
    }
}
