//! Fused-kernel descriptions without a GPU: mistakes are reported, and every chain's source
//! compiles with NVRTC for each element type (skipped without libnvrtc; REQUIRE_NVRTC=1 fails
//! then).

#[path = "support/fuse_chains.rs"]
mod chains;
#[path = "support/child.rs"]
mod child;
#[path = "support/nvrtc.rs"]
mod support_nvrtc;

use support_nvrtc::nvrtc_or_skip;

use cudrv::fuse::{DType, Fusion, Shape};

#[test]
fn every_chain_compiles_for_every_type() {
    if !nvrtc_or_skip("every_chain_compiles_for_every_type") {
        return;
    }
    for t in chains::TYPES {
        for f in chains::all(t) {
            let source = f.source().unwrap();
            let c = cudrv::nvrtc::Program::new(source.clone())
                .arch("compute_80")
                .no_cache()
                .compile()
                .unwrap_or_else(|e| panic!("{} {t:?}: {e}\n{source}", f.name()));
            assert!(c.ptx().contains(&format!(".entry {}", f.name())), "{}", f.name());
        }
    }
}

#[test]
fn shapes_follow_broadcasting() {
    let mut f = Fusion::new("k", DType::F32);
    let (m, r, c, s) = (f.input("m"), f.row_input("r"), f.col_input("c"), f.scalar("s"));
    assert_eq!((&r + &c).shape(), Shape::Matrix);
    assert_eq!((&r * &s).shape(), Shape::Row);
    assert_eq!((&c - 1.0).shape(), Shape::Col);
    assert_eq!((&m * &r).sum_rows().shape(), Shape::Col);
    assert_eq!(r.sum_rows().shape(), Shape::Col);
    assert_eq!((2.0 * &s).shape(), Shape::Scalar);
}

#[test]
fn mistakes_in_a_description_are_clear_errors() {
    let err = |f: &Fusion| f.source().unwrap_err().to_string();
    let f = Fusion::new("9bad", DType::F32);
    assert!(err(&f).contains("C identifier"), "{}", err(&f));
    let f = Fusion::new("empty", DType::F32);
    assert!(err(&f).contains("no output"), "{}", err(&f));
    let mut f = Fusion::new("twice", DType::F32);
    let x = f.input("x");
    let x2 = f.input("x");
    f.output("y", x + x2);
    assert!(err(&f).contains("used twice"), "{}", err(&f));
    let mut f = Fusion::new("col_reduce", DType::F32);
    let c = f.col_input("c");
    f.output("y", c.sum_rows());
    assert!(err(&f).contains("row reduction"), "{}", err(&f));
    let mut f = Fusion::new("kth_of_col", DType::F32);
    let c = f.col_input("c");
    f.output("y", c.kth_smallest_rows(1.0));
    assert!(
        err(&f).contains("k-th smallest value needs a value that varies"),
        "{}",
        err(&f)
    );
    let mut f = Fusion::new("kth_by_row", DType::F32);
    let (x, k) = (f.input("x"), f.row_input("k"));
    f.output("y", x.kth_smallest_rows(k));
    assert!(err(&f).contains("must be a scalar"), "{}", err(&f));
    let mut other = Fusion::new("other", DType::F32);
    let foreign = other.input("z");
    let mut f = Fusion::new("mixed", DType::F32);
    let _ = f.input("a");
    f.output("y", foreign);
    assert!(err(&f).contains("another fusion"), "{}", err(&f));
    // The source of a broken description says why, for a build that compiles it anyway.
    assert!(Fusion::new("e", DType::F64).cuda_source().starts_with("#error"));
}

#[test]
fn emitted_ptx_carries_the_description_signature() {
    if !nvrtc_or_skip("emitted_ptx_carries_the_description_signature") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("cudrv-fuse-emit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = chains::kl_sum(DType::F32);
    let path = cudrv::fuse::emit_ptx(&f, "compute_80", &dir).unwrap();
    let ptx = std::fs::read_to_string(&path).unwrap();
    assert!(ptx.starts_with("// cudrv fusion kl_sum "), "{}", &ptx[..80]);
    assert!(ptx.contains(".entry kl_sum"));
    assert!(dir.join("kl_sum.cu").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Set in the child processes of `a_corrupted_cache_entry_is_compiled_again`.
const CACHE_CHILD: &str = "CUDRV_FUSE_CACHE_TEST_CHILD";

/// In a child process (its own cache directory): compiles a fusion's source and prints the
/// cache's counters. Does nothing in the test run itself.
#[test]
fn cache_child() {
    if std::env::var(CACHE_CHILD).is_err() {
        return;
    }
    let source = chains::belief_update(DType::F32).source().unwrap();
    let c = cudrv::nvrtc::Program::new(source).arch("compute_80").compile().unwrap();
    assert!(c.ptx().contains(".entry belief_update"));
    let s = cudrv::kernel_cache::KernelCache::global().stats();
    println!("CHILD STATS hits={} misses={} corrupt={}", s.hits, s.misses, s.corrupt);
}

#[test]
fn a_corrupted_cache_entry_is_compiled_again() {
    if !nvrtc_or_skip("a_corrupted_cache_entry_is_compiled_again") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("cudrv-fuse-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = || {
        let line = child::run(
            "cache_child",
            &[(CACHE_CHILD, "1".as_ref()), ("CUDRV_CACHE_DIR", dir.as_os_str())],
            &[],
        );
        let field = |name: &str| -> u64 {
            let at = line.find(&format!("{name}=")).unwrap() + name.len() + 1;
            line[at..].split_whitespace().next().unwrap().parse().unwrap()
        };
        (field("hits"), field("misses"), field("corrupt"), line.clone())
    };
    let (hits, misses, _, text) = run();
    assert_eq!((hits, misses), (0, 1), "first process compiles: {text}");
    let (hits, misses, _, text) = run();
    assert_eq!((hits, misses), (1, 0), "second process reads the cache: {text}");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
    }
    let (hits, _, corrupt, text) = run();
    assert_eq!(
        (hits, corrupt),
        (0, 1),
        "a damaged entry is noticed and compiled again: {text}"
    );
    let (hits, misses, corrupt, text) = run();
    assert_eq!((hits, misses, corrupt), (1, 0, 0), "and rewritten: {text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
