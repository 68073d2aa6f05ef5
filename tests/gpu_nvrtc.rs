//! GPU tests of `cudrv::nvrtc`: programs compiled at run time for the context's device, loaded as
//! PTX and as a cubin, launched with checked arguments, their results checked on the host. Without
//! a GPU each test says it skipped; with `REQUIRE_GPU=1` a missing GPU fails them, and so does a
//! missing libnvrtc (the GPU machines have one: set `CUDRV_LIBNVRTC` where it is not on the
//! loader's path).

#[path = "support/gpu.rs"]
mod gpu;

use cudrv::module::Module;
use cudrv::nvrtc::Program;
use cudrv::{DeviceBuffer, DeviceSlice, LaunchConfig};

const SCALE: &str = r#"#include "shift.h"
template <typename T> __global__ void scale(T* x, T a, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + (T)SHIFT;
}"#;

fn nvrtc_or_skip(test: &str) -> bool {
    match cudrv::nvrtc::version() {
        Ok(_) => true,
        Err(e) => {
            assert!(std::env::var("REQUIRE_GPU").as_deref() != Ok("1"), "{test}: {e}");
            println!("SKIPPED (no libnvrtc): {test}: {e}");
            false
        }
    }
}

#[test]
fn compiled_ptx_and_cubin_run_on_the_device() {
    let Some(ctx) = gpu!("compiled_ptx_and_cubin_run_on_the_device") else {
        return;
    };
    if !nvrtc_or_skip("compiled_ptx_and_cubin_run_on_the_device") {
        return;
    }
    let stream = ctx.new_stream().unwrap();
    let n = 100_003usize;
    let host: Vec<f32> = (0..n).map(|i| (i % 977) as f32 * 0.25 - 60.0).collect();
    for cubin in [false, true] {
        let mut program = Program::new(SCALE)
            .name("scale.cu")
            .header("shift.h", "#define SHIFT 3\n")
            .name_expression("scale<float>")
            .name_expression("scale<double>");
        if cubin {
            program = program.cubin();
        }
        let compiled = program.arch_for(&ctx).compile().unwrap();
        let module = if cubin {
            Module::from_image(&ctx, compiled.cubin().unwrap(), "scale.cubin").unwrap()
        } else {
            Module::from_ptx(&ctx, compiled.ptx(), "scale.ptx").unwrap()
        };
        let f = module.function(compiled.lowered_name("scale<float>").unwrap()).unwrap();
        let x = DeviceBuffer::from_slice(&stream, &host).unwrap();
        let (a, count) = (1.5f32, n as u64);
        let mut l = stream.launch_builder(&f);
        l.arg(&x).arg(&a).arg(&count);
        // SAFETY: scale<float>(float*, float, u64) with n elements in x.
        unsafe { l.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
        let got = x.to_vec().unwrap();
        for (i, (&g, &h)) in got.iter().zip(&host).enumerate() {
            assert_eq!(g, 1.5 * h + 3.0, "cubin {cubin}: element {i}");
        }
        // The double instance is there too, under its own lowered name.
        let d = compiled.lowered_name("scale<double>").unwrap();
        assert!(module.function(d).is_ok());
    }
}

#[test]
fn a_program_that_does_not_compile_loads_nothing() {
    let Some(_ctx) = gpu!("a_program_that_does_not_compile_loads_nothing") else {
        return;
    };
    if !nvrtc_or_skip("a_program_that_does_not_compile_loads_nothing") {
        return;
    }
    let err = Program::new("__global__ void k() { not_declared(); }")
        .no_cache()
        .compile()
        .unwrap_err();
    assert!(matches!(err, cudrv::Error::Nvrtc { .. }), "{err}");
    assert!(err.to_string().contains("not_declared"), "{err}");
}
