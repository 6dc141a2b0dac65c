//! Every code a finding carries, one enum per kind: a rule's id (`GP001`…), a plan load or
//! validation error (`plan::unknown-key`…), a catalog load error (`catalog::invalid`). They are
//! text only where they are read (`--allow`, `[[allow]] rule`) and printed (`check --format
//! json`'s `rule`, SARIF's `ruleId`, the baseline's key).

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

/// The code of a catalog load error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CatalogCode {
    /// A data file (embedded, `--catalog DIR` or the refresh cache) that does not parse or
    /// holds a value out of range.
    Invalid,
}

impl CatalogCode {
    pub const ALL: &'static [CatalogCode] = &[CatalogCode::Invalid];

    pub fn as_str(self) -> &'static str {
        match self {
            CatalogCode::Invalid => "catalog::invalid",
        }
    }
}

/// Declares `RuleId` from its variants, each spelled as the id it prints.
macro_rules! rule_ids {
    ($($id:ident),* $(,)?) => {
        /// A `check` rule's stable id. The registry (`rules::RULES`) holds one rule per id, in
        /// this order.
        #[allow(clippy::upper_case_acronyms)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum RuleId {
            $($id),*
        }

        impl RuleId {
            pub const ALL: &'static [RuleId] = &[$(RuleId::$id),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(RuleId::$id => stringify!($id)),*
                }
            }
        }
    };
}

rule_ids! {
    GP001, GP002, GP003, GP004, GP005, GP006, GP007, GP008, GP009, GP010, GP011,
    GP012, GP013, GP014, GP015, GP016, GP017, GP018, GP019, GP020, GP021, GP022,
    GP023, GP024, GP025, GP026, GP027, GP028, GP029, GP030, GP031, GP032, GP033,
    GP034, GP035, GP036,
}

impl RuleId {
    /// The id a plan's `[[allow]] rule` or `[rules] deny` spells, exactly.
    pub fn parse(s: &str) -> Option<RuleId> {
        RuleId::ALL.iter().copied().find(|r| r.as_str() == s)
    }

    /// Its position in `RuleId::ALL` and in the registry.
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// What a finding is about: which rule made it, or which kind of load error it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    Rule(RuleId),
    Plan(PlanCode),
    Catalog(CatalogCode),
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Rule(r) => r.as_str(),
            Code::Plan(c) => c.as_str(),
            Code::Catalog(c) => c.as_str(),
        }
    }

    /// The rule that made the finding, if a rule did.
    pub fn rule(self) -> Option<RuleId> {
        match self {
            Code::Rule(r) => Some(r),
            Code::Plan(_) | Code::Catalog(_) => None,
        }
    }
}

impl From<RuleId> for Code {
    fn from(r: RuleId) -> Code {
        Code::Rule(r)
    }
}

impl From<PlanCode> for Code {
    fn from(c: PlanCode) -> Code {
        Code::Plan(c)
    }
}

impl From<CatalogCode> for Code {
    fn from(c: CatalogCode) -> Code {
        Code::Catalog(c)
    }
}

crate::core::as_text!(RuleId);
crate::core::as_text!(Code);
