//! The embedded font every native plot draws with (experiment plots and validation
//! overlays alike).

use plotters::style::FontStyle;

/// Register the embedded DejaVu Sans as `sans-serif` (once): plotters' text needs a font
/// to measure and rasterize, and a fresh machine may have none installed.
pub fn register() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font shipped by the dejavu crate.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}
