//! Links the addon against Node-API as napi-rs needs on each platform.

fn main() {
    napi_build::setup();
}
