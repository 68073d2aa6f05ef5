// The harness both example suites include: a GPU probe that never panics, the working
// directory the examples expect (they read `./examples/sin.ptx`), and `example!`, which
// compiles one example file as a module and runs its `main`.

/// Whether at least `needed` GPUs are present; says it skipped otherwise (a failure under
/// `REQUIRE_GPU=1` when there is none at all). The probe goes through cudrv, which never panics:
/// under `legacy`, cudarc would panic without libcuda.
#[allow(dead_code)]
fn gpus(name: &str, needed: usize) -> bool {
    let require = std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1");
    match cudrv::Device::count() {
        Ok(n) if n >= needed => true,
        Ok(n) if n > 0 => {
            println!("SKIPPED (needs {needed} GPUs, found {n}): {name}");
            false
        }
        other => {
            assert!(!require, "REQUIRE_GPU=1 but no GPU: {other:?}");
            println!("SKIPPED (no GPU): {name}");
            false
        }
    }
}

/// Moves the process, once, into a directory whose `examples/sin.ptx` is the examples' PTX
/// file, wherever the test binary runs (the GPU machine has no source tree).
#[allow(dead_code)]
fn in_examples_dir() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dir = std::env::temp_dir().join(format!("cudarc-examples-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("examples")).expect("temporary directory");
        std::fs::write(dir.join("examples/sin.ptx"), include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/sin.ptx")))
            .expect("write sin.ptx");
        std::env::set_current_dir(&dir).expect("enter the temporary directory");
    });
}

#[allow(unused_macros)]
macro_rules! example {
    ($test:ident, $file:literal) => {
        example!($test, $file, gpus = 1);
    };
    // An example that the device itself may refuse: `main` must return `Ok` or an error whose
    // text names `$code` (the same outcome the real cudarc has on that device), nothing else.
    ($test:ident, $file:literal, or_device_refuses = $code:literal) => {
        #[test]
        fn $test() {
            mod example {
                include!(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/", $file));
                pub(super) fn run() -> Result<(), String> {
                    main().map_err(|e| format!("{e:?}"))
                }
            }
            if !gpus(stringify!($test), 1) {
                return;
            }
            in_examples_dir();
            println!("=== {}", $file);
            match example::run() {
                Ok(()) => {}
                Err(e) if e.contains($code) => println!("THE DEVICE REFUSES ({}): {e}", $code),
                Err(e) => panic!(concat!($file, ": main returned an error: {}"), e),
            }
        }
    };
    ($test:ident, $file:literal, gpus = $n:expr) => {
        #[test]
        fn $test() {
            mod example {
                include!(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/", $file));
                pub(super) fn run() {
                    main().expect(concat!($file, ": main returned an error"));
                }
            }
            if !gpus(stringify!($test), $n) {
                return;
            }
            in_examples_dir();
            println!("=== {}", $file);
            example::run();
        }
    };
}
