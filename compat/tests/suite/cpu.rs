//! Without a GPU: configuration types, nvrtc, errors for missing pieces, and the module paths
//! cudarc users import.

use super::*;

#[test]
fn launch_config_for_num_elems() {
    let cfg = LaunchConfig::for_num_elems(1025);
    assert_eq!(cfg.grid_dim, (2, 1, 1));
    assert_eq!(cfg.block_dim, (1024, 1, 1));
    assert_eq!(cfg.shared_mem_bytes, 0);
    assert_eq!(LaunchConfig::for_num_elems(1024).grid_dim, (1, 1, 1));
}

#[test]
fn blas_configs_are_plain_structs() {
    let g = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: 4,
        n: 5,
        k: 6,
        alpha: 1.0f32,
        lda: 6,
        ldb: 6,
        beta: 0.0,
        ldc: 4,
    };
    let b = StridedBatchedConfig {
        gemm: g,
        batch_size: 2,
        stride_a: 24,
        stride_b: 30,
        stride_c: 20,
    };
    let v = GemvConfig {
        trans: cublasOperation_t::CUBLAS_OP_N,
        m: 3,
        n: 2,
        alpha: 1.0f64,
        lda: 3,
        incx: 1,
        beta: 0.0,
        incy: 1,
    };
    assert_eq!(b.gemm.transa, cublasOperation_t::CUBLAS_OP_T);
    assert_eq!((b.batch_size, v.m, v.n), (2, 3, 2));
    assert_eq!(cublasOperation_t::CUBLAS_OP_N as u32, 0);
}

#[test]
fn nvrtc_compiles_to_ptx() {
    let opts = CompileOptions {
        ftz: Some(true),
        name: Some("suite.cu".into()),
        ..Default::default()
    };
    let Some(ptx) = compiled("nvrtc_compiles_to_ptx", || compile_ptx_with_opts(KERNELS, opts)) else {
        return;
    };
    let src = ptx.to_src();
    for entry in ["axpy", "affine", "inc", "use_coeff"] {
        assert!(src.contains(&format!(".entry {entry}")), "{entry} missing from PTX");
    }
    // Ptx from text round-trips.
    let again: Ptx = src.clone().into();
    assert_eq!(again.to_src(), src);
    let _ = Ptx::from_src("x");
    let _ = Ptx::from_file("kernels.ptx");
}

#[test]
fn nvrtc_reports_the_log() {
    let bad = "extern \"C\" __global__ void broken(float *x) { x[0] = undeclared; }";
    let outcome = std::panic::catch_unwind(|| compile_ptx(bad));
    match outcome {
        Ok(Err(CompileError::CompileError { log, .. })) => {
            let log = log.to_string_lossy();
            assert!(log.contains("undeclared"), "{log}");
        }
        Ok(Err(e)) if format!("{e:?}").contains("LibraryNotFound") => {
            say("SKIPPED (no libnvrtc): nvrtc_reports_the_log".into())
        }
        Err(_) => say("SKIPPED (no libnvrtc): nvrtc_reports_the_log".into()),
        Ok(other) => panic!("expected a compile error, got {other:?}"),
    }
}

/// compat only: a missing driver entry point or library maps onto a code, keeping the message.
#[cfg(not(feature = "legacy"))]
#[test]
fn missing_pieces_are_errors_not_panics() {
    let e = DriverError::from_cudrv(cudrv::Error::MissingSymbol {
        name: "cuMemAllocAsync",
        library: "libcuda.so.1".into(),
    });
    assert_eq!(e, DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND));
    assert!(e.detail().unwrap().contains("cuMemAllocAsync"));
    // Without a driver, contexts are errors too.
    if cudrv::Device::count().is_err() {
        let err = CudaContext::new(0).unwrap_err();
        assert!(err.detail().is_some(), "{err:?}");
    }
    let _ = nvrtc::version();
}

#[test]
fn module_paths_match_cudarc() {
    // These paths are what cudarc users import; they must resolve under both features.
    let _: Option<driver::CudaGraph> = None;
    let _: Option<driver::CudaEvent> = None;
    let _: Option<driver::CudaView<'static, f32>> = None;
    let _: Option<driver::CudaViewMut<'static, f32>> = None;
    let _: Option<driver::PinnedHostSlice<f32>> = None;
    let _: Option<driver::LaunchArgs<'static>> = None;
    let _: fn(&CudaSlice<f32>) -> usize = DeviceSlice::<f32>::len;
    let _ = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE;
    let _ = nvrtc::CompileOptions::default();
    let _: Option<nvrtc::Ptx> = None;
}
