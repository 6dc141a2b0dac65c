//! Any bytes through the plan loader and, when they validate, every rule.
#![no_main]

use std::sync::OnceLock;

use gpuplan::catalog::Catalog;
use gpuplan::core::Provider;
use gpuplan::plan::{self, Date};
use gpuplan::rules::{self, Levels};
use libfuzzer_sys::fuzz_target;

fn catalog() -> &'static Catalog {
    static C: OnceLock<Catalog> = OnceLock::new();
    C.get_or_init(|| Catalog::embedded(&Provider::ALL).expect("embedded catalog"))
}

fuzz_target!(|data: &[u8]| {
    // The binary's own route: bytes to a source file, then parse, validate and rule ids.
    let Ok(file) = plan::load::from_bytes("fuzz.toml".into(), data.to_vec()) else {
        return;
    };
    if let Ok(p) = plan::Plan::load(file, catalog()) {
        let today = Date { year: 2026, month: 12, day: 2 };
        for d in rules::check(&p, catalog(), today, &Levels::default()) {
            assert!(d.span.end <= p.file.text.len());
        }
    }
});
