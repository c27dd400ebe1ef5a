//! Generates the `i18n` module from `locales/*.json` (leptos_i18n): one key set, English the
//! default, Simplified Chinese beside it.

use std::{error::Error, path::PathBuf};

use leptos_i18n_build::{Config, ParseOptions, TranslationsInfos};

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=Cargo.toml");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?).join("i18n");
    // Interpolated strings are also built outside views (notices, attributes).
    let config = Config::new("en")?
        .add_locale("zh-CN")?
        .parse_options(ParseOptions::new().interpolate_display(true));
    let translations = TranslationsInfos::parse(config)?;
    translations.emit_diagnostics();
    translations.rerun_if_locales_changed();
    translations.generate_i18n_module(out)?;
    Ok(())
}
