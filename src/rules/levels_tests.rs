//! `Levels::severity`, the one rule `check`'s diagnostics and `recommend`'s findings are
//! levelled by.

use super::{Level, Levels};
use crate::diag::{RuleId, Severity};

#[test]
fn a_rule_level_wins_and_deny_warnings_raises_only_warnings() {
    let mut levels = Levels::default();
    levels.overrides.insert(RuleId::GP001, Level::Deny);
    levels.overrides.insert(RuleId::GP002, Level::Warn);
    for found in [Severity::Note, Severity::Warning, Severity::Error] {
        assert_eq!(levels.severity(Some(RuleId::GP001), found), Severity::Error);
        assert_eq!(
            levels.severity(Some(RuleId::GP002), found),
            Severity::Warning
        );
        // No level: as found, with or without a rule.
        assert_eq!(levels.severity(Some(RuleId::GP003), found), found);
        assert_eq!(levels.severity(None, found), found);
    }
    levels.deny_warnings = true;
    assert_eq!(
        levels.severity(Some(RuleId::GP003), Severity::Warning),
        Severity::Error
    );
    // A load diagnostic's warning is raised too, as `check` always raised it.
    assert_eq!(levels.severity(None, Severity::Warning), Severity::Error);
    assert_eq!(levels.severity(None, Severity::Note), Severity::Note);
    // `-W` keeps a rule a warning even under `--deny-warnings`.
    assert_eq!(
        levels.severity(Some(RuleId::GP002), Severity::Error),
        Severity::Warning
    );
}
