//! Both cudarc eras in one crate: `cudarc` here is the CudaDevice era (`cudrv-compat-012`, or
//! cudarc 0.12.1 under `legacy`) and `cudrv_compat` the CudaContext era. Each keeps its own
//! `DevicePtr` traits; data moves between them through the host.

include!("../../harness.rs");

#[test]
fn both_eras_in_one_crate() {
    if !gpus("both_eras_in_one_crate", 1) {
        return;
    }
    let host: Vec<f32> = (0..4096).map(|i| (i as f32).sqrt()).collect();
    let dev = cudarc::driver::CudaDevice::new(0).unwrap();
    let old = dev.htod_sync_copy(&host).unwrap();
    let ctx = cudrv_compat::driver::CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let new = stream.clone_htod(&dev.dtoh_sync_copy(&old).unwrap()).unwrap();
    assert_eq!(stream.clone_dtoh(&new).unwrap(), host);
}
