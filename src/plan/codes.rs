//! The codes of plan errors, one per kind of problem: what `check --format json` prints as a
//! finding's `rule` for a plan that cannot be loaded, and what SARIF and the baseline key on.

use std::fmt;

/// A plan load or validation error's code (`plan::unknown-key`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PlanCode {
    CapacityBlockNotAws,
    ConflictingKeys,
    DuplicateKey,
    DuplicateName,
    EmptyValue,
    InvalidName,
    InvalidSubscription,
    InvalidValue,
    MissingKey,
    NotUtf8,
    OutOfRange,
    SkuNotOffered,
    SubscriptionNotAzure,
    Syntax,
    TooDeep,
    TooLarge,
    UnknownGpuModel,
    UnknownKey,
    UnknownQuotaFamily,
    UnknownReference,
    UnknownRegion,
    UnknownRule,
    UnknownSku,
    Unreadable,
    UnsupportedVersion,
    WrongType,
}

impl PlanCode {
    pub const ALL: &'static [PlanCode] = &[
        PlanCode::CapacityBlockNotAws,
        PlanCode::ConflictingKeys,
        PlanCode::DuplicateKey,
        PlanCode::DuplicateName,
        PlanCode::EmptyValue,
        PlanCode::InvalidName,
        PlanCode::InvalidSubscription,
        PlanCode::InvalidValue,
        PlanCode::MissingKey,
        PlanCode::NotUtf8,
        PlanCode::OutOfRange,
        PlanCode::SkuNotOffered,
        PlanCode::SubscriptionNotAzure,
        PlanCode::Syntax,
        PlanCode::TooDeep,
        PlanCode::TooLarge,
        PlanCode::UnknownGpuModel,
        PlanCode::UnknownKey,
        PlanCode::UnknownQuotaFamily,
        PlanCode::UnknownReference,
        PlanCode::UnknownRegion,
        PlanCode::UnknownRule,
        PlanCode::UnknownSku,
        PlanCode::Unreadable,
        PlanCode::UnsupportedVersion,
        PlanCode::WrongType,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PlanCode::CapacityBlockNotAws => "plan::capacity-block-not-aws",
            PlanCode::ConflictingKeys => "plan::conflicting-keys",
            PlanCode::DuplicateKey => "plan::duplicate-key",
            PlanCode::DuplicateName => "plan::duplicate-name",
            PlanCode::EmptyValue => "plan::empty-value",
            PlanCode::InvalidName => "plan::invalid-name",
            PlanCode::InvalidSubscription => "plan::invalid-subscription",
            PlanCode::InvalidValue => "plan::invalid-value",
            PlanCode::MissingKey => "plan::missing-key",
            PlanCode::NotUtf8 => "plan::not-utf8",
            PlanCode::OutOfRange => "plan::out-of-range",
            PlanCode::SkuNotOffered => "plan::sku-not-offered",
            PlanCode::SubscriptionNotAzure => "plan::subscription-not-azure",
            PlanCode::Syntax => "plan::syntax",
            PlanCode::TooDeep => "plan::too-deep",
            PlanCode::TooLarge => "plan::too-large",
            PlanCode::UnknownGpuModel => "plan::unknown-gpu-model",
            PlanCode::UnknownKey => "plan::unknown-key",
            PlanCode::UnknownQuotaFamily => "plan::unknown-quota-family",
            PlanCode::UnknownReference => "plan::unknown-reference",
            PlanCode::UnknownRegion => "plan::unknown-region",
            PlanCode::UnknownRule => "plan::unknown-rule",
            PlanCode::UnknownSku => "plan::unknown-sku",
            PlanCode::Unreadable => "plan::unreadable",
            PlanCode::UnsupportedVersion => "plan::unsupported-version",
            PlanCode::WrongType => "plan::wrong-type",
        }
    }
}

impl fmt::Display for PlanCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<PlanCode> for String {
    fn from(c: PlanCode) -> String {
        c.as_str().to_owned()
    }
}
