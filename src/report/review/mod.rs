//! `gpuplan review`'s output: the review as Markdown, as a self-contained HTML page with SVG
//! charts, or as JSON.

use crate::review::Review;

mod cells;
mod grounds;
mod html;
mod markdown;
mod next_plan;
mod noticed;
mod says;

pub(crate) use html::html;
pub(crate) use markdown::markdown;

pub(crate) fn json(r: &Review) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default() + "\n"
}
