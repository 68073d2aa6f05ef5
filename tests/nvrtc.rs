//! `cudrv::nvrtc` against the real libnvrtc, which needs no GPU: PTX and cubins, compile errors
//! with their log, in-memory headers, lowered names. Without libnvrtc (`CUDRV_LIBNVRTC` or the
//! loader's path) each test says it skipped; with `REQUIRE_NVRTC=1` a missing library fails them.

#[path = "support/nvrtc.rs"]
mod support_nvrtc;

use cudrv::nvrtc::{self, Program};
use support_nvrtc::nvrtc_or_skip;

const TWICE: &str = r#"extern "C" __global__ void twice(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}"#;

#[test]
fn compiles_to_ptx_and_cubin() {
    if !nvrtc_or_skip("compiles_to_ptx_and_cubin") {
        return;
    }
    let (major, _) = nvrtc::version().unwrap();
    assert!(major >= 12);
    let c = Program::new(TWICE).arch("compute_80").compile().unwrap();
    assert!(c.ptx().contains(".entry twice"), "{}", c.ptx());
    assert!(c.ptx().contains(".target sm_80"));
    assert_eq!(c.ptx_with_nul().last(), Some(&0));
    assert!(c.cubin().is_none());
    let c = Program::new(TWICE).cubin().arch("sm_80").compile().unwrap();
    assert!(c.cubin().unwrap().starts_with(b"\x7fELF"));
}

#[test]
fn a_compile_error_carries_the_log_and_the_options() {
    if !nvrtc_or_skip("a_compile_error_carries_the_log_and_the_options") {
        return;
    }
    let err = Program::new("__global__ void k() { undefined_name = 1; }")
        .name("broken.cu")
        .option("--fmad=false")
        .compile()
        .unwrap_err();
    match &err {
        cudrv::Error::Nvrtc {
            api,
            name,
            options,
            log,
            ..
        } => {
            assert_eq!(*api, "nvrtcCompileProgram");
            assert_eq!(*name, "NVRTC_ERROR_COMPILATION");
            assert_eq!(options, &["--fmad=false"]);
            assert!(log.contains("undefined_name") && log.contains("broken.cu"), "{log}");
        }
        other => panic!("not a compile error: {other}"),
    }
    assert!(err.to_string().contains("undefined_name"));
    // A bad option is an error too, not a panic.
    assert!(Program::new(TWICE).option("--no-such-option").compile().is_err());
    // A NUL byte is refused before NVRTC sees it.
    assert!(matches!(
        Program::new("__global__ void k() {}\0").compile(),
        Err(cudrv::Error::InvalidArgument(_))
    ));
}

#[test]
fn headers_from_memory_and_defines() {
    if !nvrtc_or_skip("headers_from_memory_and_defines") {
        return;
    }
    let c = Program::new("#include \"scale.h\"\nextern \"C\" __global__ void k(float* x) { x[0] *= SCALE * BIAS; }")
        .header("scale.h", "#define SCALE 3.0f\n")
        .define("BIAS", Some("2.0f"))
        .arch("compute_80")
        .compile()
        .unwrap();
    assert!(c.ptx().contains(".entry k"));
    // A CUDA header, found beside the loaded libnvrtc or in the toolkit, on the first compile
    // of the process as on later ones (where the machine has the headers at all).
    if nvrtc::cuda_include_dirs()
        .iter()
        .any(|d| d.join("cuda_fp16.h").is_file())
    {
        let c = Program::new(
            "#include <cuda_fp16.h>\nextern \"C\" __global__ void h(__half* x) { x[0] = __hadd(x[0], x[0]); }",
        )
        .arch("compute_80")
        .no_cache()
        .compile()
        .unwrap();
        assert!(c.ptx().contains(".entry h"));
    }
    // A header that is nowhere: the error says where cudrv looked.
    let err = Program::new("#include \"nowhere.h\"\n__global__ void k() {}")
        .compile()
        .unwrap_err();
    assert!(err.to_string().contains("include"), "{err}");
}

#[test]
fn lowered_names_of_templates() {
    if !nvrtc_or_skip("lowered_names_of_templates") {
        return;
    }
    let c = Program::new("template <typename T> __global__ void scale(T* x, T a) { x[0] *= a; }")
        .name_expression("scale<float>")
        .name_expression("scale<double>")
        .arch("compute_80")
        .compile()
        .unwrap();
    let f = c.lowered_name("scale<float>").unwrap();
    let d = c.lowered_name("scale<double>").unwrap();
    assert_ne!(f, d);
    assert!(c.ptx().contains(&format!(".entry {f}")), "{f}");
    assert!(c.ptx().contains(&format!(".entry {d}")), "{d}");
    assert_eq!(c.lowered_name("scale<int>"), None);
}

#[test]
fn a_program_compiles_once_then_comes_from_the_cache() {
    if !nvrtc_or_skip("a_program_compiles_once_then_comes_from_the_cache") {
        return;
    }
    let cache = cudrv::kernel_cache::KernelCache::global();
    if !cache.enabled() {
        println!("SKIPPED (kernel cache disabled): a_program_compiles_once_then_comes_from_the_cache");
        return;
    }
    // A source no earlier run compiled: its own constant.
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let source = format!("extern \"C\" __global__ void k(unsigned long long* x) {{ x[0] = {nonce}ull; }}");
    let program = Program::new(source).arch("compute_80").name_expression("k");
    // (Other tests compile at the same time: the counters only grow, so the checks are >=.)
    let before = cache.stats();
    let first = program.compile().unwrap();
    let mid = cache.stats();
    assert!(mid.misses > before.misses, "a new program is compiled and stored");
    let second = program.compile().unwrap();
    assert!(cache.stats().hits > mid.hits, "the same program comes from the cache");
    assert_eq!(first.ptx(), second.ptx());
    assert_eq!(first.lowered_name("k"), second.lowered_name("k"));
    // no_cache compiles again, to the same PTX.
    let third = program.clone().no_cache().compile().unwrap();
    assert_eq!(third.ptx(), first.ptx());
    // A different option is a different program.
    let fast = program.clone().option("--use_fast_math").compile().unwrap();
    assert!(fast.ptx().contains(".entry k"));
}
