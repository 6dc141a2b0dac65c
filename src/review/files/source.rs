//! What both file formats share: where an error is, the window asked for, and the grid the
//! data's span gives.

use crate::review::query::{Answers, Grid};
use crate::review::ReviewError;

pub(super) fn err(file: &str, line: usize, msg: impl std::fmt::Display) -> ReviewError {
    ReviewError::At {
        file: file.to_owned(),
        line,
        column: None,
        message: msg.to_string(),
    }
}

pub(super) fn err_at(
    file: &str,
    line: usize,
    col: usize,
    msg: impl std::fmt::Display,
) -> ReviewError {
    ReviewError::At {
        file: file.to_owned(),
        line,
        column: Some(col),
        message: msg.to_string(),
    }
}

pub(super) fn read_err(file: &str) -> impl Fn(std::io::Error) -> ReviewError + '_ {
    move |source| ReviewError::Read {
        file: file.to_owned(),
        source,
    }
}

pub(super) fn file_err(file: &str, message: String) -> ReviewError {
    ReviewError::File {
        file: file.to_owned(),
        message,
    }
}

/// The longest exposition line read: a sample with hundreds of labels is a few KiB.
pub(super) const MAX_LINE: u64 = 1 << 20;

/// The window the user asked for, before the data's span fills the rest.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub window: Option<i64>,
    pub step: Option<i64>,
}

/// What a file gave: the queries' answers on their grid.
pub struct Read {
    pub answers: Answers,
    pub grid: Grid,
    pub source: String,
    pub notes: Vec<crate::review::noticed::Noticed>,
}

/// The grid for data spanning `[min_ms, max_ms]` and what the user asked: `--from`/`--to`
/// win; `--window` alone is the last stretch of the data (or before `--to`); the step is
/// `--step`, or the one a Prometheus server would be asked at for that span, and an unset
/// start is aligned to it. A window the user bounded is read in whole steps inside it, with
/// a note for a last part shorter than a step that is not read.
pub(super) fn grid_for(
    min_ms: i64,
    max_ms: i64,
    w: Window,
) -> Result<(Grid, Option<crate::review::noticed::Noticed>), ReviewError> {
    let data_from = min_ms.div_euclid(1000);
    let data_to = (max_ms + 999).div_euclid(1000) + 1;
    let span = |from: i64, to: i64| {
        if from >= to {
            Err(ReviewError::Window(
                "the window is empty: `--from` must come before `--to`".to_owned(),
            ))
        } else {
            Ok(w.step
                .unwrap_or_else(|| crate::review::prometheus::step_for(to - from)))
        }
    };
    // Bounds the user did not give follow the data, aligned outwards to the step; a
    // `--window` alone is the last stretch of the data. A bound the user gave is kept: the
    // data-led one moves to a whole number of steps from it.
    let (from, to, step) = match (w.from, w.to, w.window) {
        (Some(f), Some(t), _) => (f, t, span(f, t)?),
        (Some(f), None, Some(win)) => (f, f + win, span(f, f + win)?),
        (None, Some(t), Some(win)) => (t - win, t, span(t - win, t)?),
        (None, None, Some(win)) => {
            let step = span(data_to - win, data_to)?;
            let to = (data_to + step - 1).div_euclid(step) * step;
            (to - win, to, step)
        }
        (Some(f), None, None) => (f, data_to, span(f, data_to)?),
        (None, Some(t), None) => {
            let step = span(data_from, t)?;
            (
                t - (t - data_from + step - 1).div_euclid(step) * step,
                t,
                step,
            )
        }
        (None, None, None) => {
            let step = span(data_from, data_to)?;
            (data_from.div_euclid(step) * step, data_to, step)
        }
    };
    if w.to.is_none() && w.window.is_none() {
        // The end follows the data: up to a step past its last sample, where there is none.
        return Grid::new(from, to, step).map(|g| (g, None));
    }
    let (grid, tail) = Grid::within(from, to, step)?;
    Ok((
        grid,
        crate::review::noticed::Noticed::tail_not_read(&grid, tail),
    ))
}

/// `tok` as a finite number from 0 to `max`; `None` otherwise (the caller names where).
pub(super) fn bounded(tok: &str, max: f64) -> Option<f64> {
    tok.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && (0.0..=max).contains(v))
}
