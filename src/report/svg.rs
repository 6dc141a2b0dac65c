//! What the SVG charts of the review and its forecast share.

/// Text for the HTML page: [`crate::core::format::markup`].
pub(crate) fn esc(s: &str) -> String {
    crate::core::format::markup(s)
}

pub(crate) const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];
