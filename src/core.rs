//! The shared vocabulary every layer speaks: providers, capacity types, sharing modes,
//! workload kinds, MIG managers, calendar dates, spanned values and the way numbers, money
//! and rates are written. It imports nothing from the crate, so any layer may use it.

use std::fmt;
use std::ops::Range;

use schemars::gen::SchemaGenerator;
use schemars::schema::Schema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod claim;
pub mod format;
pub mod labels;

/// Exit codes, the same for every command.
pub mod exit {
    pub(crate) const OK: u8 = 0;
    pub(crate) const FINDINGS: u8 = 1;
    pub(crate) const INPUT: u8 = 2;
}

pub use claim::GpuClaim;
pub use format::{
    cents, excerpt, num, printable, printable_lines, rate, redact, redact_short, shown, usd,
};

/// Declares a closed set of names the tool prints and serialises: the enum, `ALL`, its text
/// (`as_str`, `Display`) and its serialisation as that text, from one list, so the name of a
/// variant is written once. Declare variants in the order of their text when the order of
/// records sorted by them is part of an output: the derived `Ord` is then the text's.
macro_rules! named_enum {
    (
        $(#[$m:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vm:meta])* $v:ident => $s:literal),* $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $($(#[$vm])* $v),*
        }

        impl $name {
            #[allow(dead_code)]
            $vis const ALL: &'static [$name] = &[$($name::$v),*];

            $vis fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $s),*
                }
            }

            /// The variant spelled exactly `s`.
            #[allow(dead_code)]
            $vis fn parse(s: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|v| v.as_str() == s)
            }
        }

        $crate::core::as_text!($name);

        // Its JSON Schema: one of its spellings.
        impl schemars::JsonSchema for $name {
            fn schema_name() -> String {
                stringify!($name).to_owned()
            }
            fn json_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
                schemars::schema::SchemaObject {
                    instance_type: Some(schemars::schema::InstanceType::String.into()),
                    enum_values: Some(
                        $name::ALL.iter().map(|v| serde_json::json!(v.as_str())).collect(),
                    ),
                    ..Default::default()
                }
                .into()
            }
        }
    };
}
pub(crate) use named_enum;

/// `Display` and `Serialize` of a type as its `as_str` text: how a code or kind is printed
/// and serialised, written once.
macro_rules! as_text {
    ($name:ty) => {
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}
pub(crate) use as_text;

/// `Serialize` as the text a type's `Display` writes: for values the engine returns as data
/// and `report` words (a pool's `why`), so the JSON carries the same words as every other
/// format.
macro_rules! serialize_as_text {
    ($($name:ty),+) => {
        $(impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        })+
    };
}
pub(crate) use serialize_as_text;

/// Hours in the month every monthly figure is quoted for (8,760 hours a year / 12).
pub(crate) const HOURS_PER_MONTH: f64 = 730.0;

/// What `nodes` nodes cost over `hours` hours at `usd_per_hour` a node-hour: the one product
/// every price in gpuplan becomes a cost by. Its order (rate, then nodes, then hours) is the
/// order the figures were always multiplied in, so a cent never moves by where it is asked.
pub(crate) fn node_hours_usd(usd_per_hour: f64, nodes: f64, hours: f64) -> f64 {
    usd_per_hour * nodes * hours
}

/// What `nodes` nodes cost held the whole month at `usd_per_hour`: capacity paid for whether
/// it runs or not (a reservation, a floor kept up).
pub(crate) fn held_month_usd(usd_per_hour: f64, nodes: f64) -> f64 {
    node_hours_usd(usd_per_hour, nodes, HOURS_PER_MONTH)
}

/// A value with the byte range it came from in the plan file.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct Sp<T>(pub toml::Spanned<T>);

impl<T> Sp<T> {
    pub fn get(&self) -> &T {
        self.0.get_ref()
    }
    pub fn span(&self) -> Range<usize> {
        self.0.span()
    }
}

impl<T> std::ops::Deref for Sp<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.get_ref()
    }
}

impl<T: JsonSchema> JsonSchema for Sp<T> {
    fn is_referenceable() -> bool {
        false
    }
    fn schema_name() -> String {
        T::schema_name()
    }
    fn json_schema(gen: &mut SchemaGenerator) -> Schema {
        gen.subschema_for::<T>()
    }
}

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Deserialize,
    Serialize,
    JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Azure,
    Aws,
}

impl Provider {
    pub const ALL: [Provider; 2] = [Provider::Azure, Provider::Aws];
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Azure => "azure",
            Provider::Aws => "aws",
        }
    }
}

/// Capacities and sharing modes are written as the plan spells them.
impl fmt::Display for Capacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Sharing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MigManager {
    Aks,
    GpuOperator,
}

impl MigManager {
    /// Whether a pool's GPUs are all split into one profile (AKS's `gpu_instance`), so that a
    /// GPU holds at most that profile's `max_count` instances; the GPU Operator's mig-parted
    /// lays out mixed profiles per GPU.
    pub fn one_profile_per_gpu(self) -> bool {
        matches!(self, MigManager::Aks)
    }
}

/// The longest reservation a plan commits to (`[plan] reservation_term`): a 3-year term is a
/// decision a person records, never a default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Deserialize, JsonSchema)]
pub enum ReservationTerm {
    /// No reservations: every floor on-demand.
    #[serde(rename = "none")]
    None,
    /// 1-year reservations (the default).
    #[default]
    #[serde(rename = "1y")]
    OneYear,
    /// 1- or 3-year reservations, whichever costs less.
    #[serde(rename = "3y")]
    ThreeYear,
}

impl ReservationTerm {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ReservationTerm::None => "none",
            ReservationTerm::OneYear => "1y",
            ReservationTerm::ThreeYear => "3y",
        }
    }

    /// Whether a reservation of this capacity type is within the term.
    pub fn allows(self, c: Capacity) -> bool {
        match c {
            Capacity::Reserved1y => self >= ReservationTerm::OneYear,
            Capacity::Reserved3y => self == ReservationTerm::ThreeYear,
            Capacity::OnDemand
            | Capacity::Spot
            | Capacity::CapacityReservation
            | Capacity::CapacityBlock => true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Training,
    Inference,
    Batch,
    Notebook,
    Evaluation,
}

impl Kind {
    /// The plan's spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Training => "training",
            Kind::Inference => "inference",
            Kind::Batch => "batch",
            Kind::Notebook => "notebook",
            Kind::Evaluation => "evaluation",
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Sharing {
    Dedicated,
    Mig,
    TimeSlicing,
    Mps,
    SharedServer,
}

impl Sharing {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Sharing::Dedicated => "dedicated",
            Sharing::Mig => "mig",
            Sharing::TimeSlicing => "time-slicing",
            Sharing::Mps => "mps",
            Sharing::SharedServer => "shared-server",
        }
    }

    /// What a pod holds of a GPU under this mode, as the node's device plugin offers it. A new
    /// mode is decided here first: the pod's request, Kueue's quota and the review's reading of
    /// a running pod all follow from it.
    pub fn hold(self) -> GpuHold {
        match self {
            Sharing::Dedicated | Sharing::SharedServer => GpuHold::Whole,
            Sharing::Mig => GpuHold::Instance,
            Sharing::TimeSlicing | Sharing::Mps => GpuHold::Replica,
        }
    }

    /// The GPU is cut into hardware instances with their own memory and compute slices (MIG):
    /// the pool needs a geometry and a MIG manager.
    pub fn is_partitioned(self) -> bool {
        self.hold() == GpuHold::Instance
    }

    /// The device plugin advertises each GPU as several replicas (time-slicing or MPS), with
    /// no memory isolation between them.
    pub fn is_replicated(self) -> bool {
        self.hold() == GpuHold::Replica
    }

    /// A pod holds less than a whole card: a MIG instance or a replica of one.
    pub fn splits_a_card(self) -> bool {
        self.hold() != GpuHold::Whole
    }

    /// A pod owns its GPU or MIG instance alone: no other pod's kernels or memory on it.
    pub fn is_exclusive(self) -> bool {
        match self {
            Sharing::Dedicated | Sharing::Mig => true,
            Sharing::TimeSlicing | Sharing::Mps | Sharing::SharedServer => false,
        }
    }

    /// Replicas are models one inference server process hosts on a card: each takes a share
    /// of the card inside that process, while the pod holds the card whole.
    pub fn is_hosted(self) -> bool {
        match self {
            Sharing::SharedServer => true,
            Sharing::Dedicated | Sharing::Mig | Sharing::TimeSlicing | Sharing::Mps => false,
        }
    }

    /// Replicas take turns on the whole card by context switching (time-slicing without the
    /// MPS daemon).
    pub fn is_time_sliced(self) -> bool {
        match self {
            Sharing::TimeSlicing => true,
            Sharing::Dedicated | Sharing::Mig | Sharing::Mps | Sharing::SharedServer => false,
        }
    }

    /// Replicas run their kernels concurrently through the MPS control daemon, which the
    /// device plugin starts per node and which cannot run on MIG instances.
    pub fn needs_mps_daemon(self) -> bool {
        match self {
            Sharing::Mps => true,
            Sharing::Dedicated | Sharing::Mig | Sharing::TimeSlicing | Sharing::SharedServer => {
                false
            }
        }
    }

    /// Several models are served by one inference-server process on whole GPUs, so they
    /// share its fault domain.
    pub fn shares_server_process(self) -> bool {
        match self {
            Sharing::SharedServer => true,
            Sharing::Dedicated | Sharing::Mig | Sharing::TimeSlicing | Sharing::Mps => false,
        }
    }

    /// The NVIDIA device plugin's `sharing` key for the mode (`timeSlicing` or `mps`), when the
    /// device plugin does the sharing.
    pub fn device_plugin_key(self) -> Option<&'static str> {
        match self {
            Sharing::TimeSlicing => Some("timeSlicing"),
            Sharing::Mps => Some("mps"),
            Sharing::Dedicated | Sharing::Mig | Sharing::SharedServer => None,
        }
    }
}

/// What a pod holds of a GPU: whole cards, a hardware instance of one, or a replica the
/// device plugin advertises of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuHold {
    Whole,
    Instance,
    Replica,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Capacity {
    OnDemand,
    Spot,
    #[serde(rename = "reserved-1y")]
    Reserved1y,
    #[serde(rename = "reserved-3y")]
    Reserved3y,
    CapacityReservation,
    /// An EC2 Capacity Block for ML (AWS only): GPU capacity bought for a fixed window.
    CapacityBlock,
}

impl Capacity {
    pub fn as_str(self) -> &'static str {
        match self {
            Capacity::OnDemand => "on-demand",
            Capacity::Spot => "spot",
            Capacity::Reserved1y => "reserved-1y",
            Capacity::Reserved3y => "reserved-3y",
            Capacity::CapacityReservation => "capacity-reservation",
            Capacity::CapacityBlock => "capacity-block",
        }
    }
    /// The reservation term of a reserved capacity, in years (a Reserved Instance or an Azure
    /// reservation); `None` for capacity bought otherwise.
    pub(crate) fn term_years(self) -> Option<u8> {
        match self {
            Capacity::Reserved1y => Some(1),
            Capacity::Reserved3y => Some(3),
            Capacity::OnDemand
            | Capacity::Spot
            | Capacity::CapacityReservation
            | Capacity::CapacityBlock => None,
        }
    }
    pub fn is_reserved(self) -> bool {
        self.term_years().is_some()
    }
    /// The provider may take the node back at short notice (spot, or Azure's low-priority
    /// cores): sold at a discount, with an eviction rate.
    pub fn is_evictable(self) -> bool {
        match self {
            Capacity::Spot => true,
            Capacity::OnDemand
            | Capacity::Reserved1y
            | Capacity::Reserved3y
            | Capacity::CapacityReservation
            | Capacity::CapacityBlock => false,
        }
    }
    /// Nodes launch into capacity held for the account in one zone (an On-Demand Capacity
    /// Reservation or a Capacity Block), bought per instance and targeted by its id; the
    /// billing-only reservations (1y, 3y) discount any matching node instead.
    pub fn is_held_capacity(self) -> bool {
        match self {
            Capacity::CapacityReservation | Capacity::CapacityBlock => true,
            Capacity::OnDemand | Capacity::Spot | Capacity::Reserved1y | Capacity::Reserved3y => {
                false
            }
        }
    }
    /// A pool on it creates its own reservation for its floor (an On-Demand Capacity
    /// Reservation, an Azure capacity reservation group), billed whether nodes use it or not;
    /// a Capacity Block is bought apart and only targeted.
    pub(crate) fn reserves_floor(self) -> bool {
        match self {
            Capacity::CapacityReservation => true,
            Capacity::OnDemand
            | Capacity::Spot
            | Capacity::Reserved1y
            | Capacity::Reserved3y
            | Capacity::CapacityBlock => false,
        }
    }
    /// Paid by the hour at list price with no commitment and no eviction: the price every
    /// other capacity is a discount or premium against.
    pub fn is_on_demand(self) -> bool {
        match self {
            Capacity::OnDemand => true,
            Capacity::Spot
            | Capacity::Reserved1y
            | Capacity::Reserved3y
            | Capacity::CapacityReservation
            | Capacity::CapacityBlock => false,
        }
    }
    /// Bought as one block of time (an EC2 Capacity Block): its nodes together, paid for the
    /// block's whole length whether used or not.
    pub(crate) fn is_block(self) -> bool {
        match self {
            Capacity::CapacityBlock => true,
            Capacity::OnDemand
            | Capacity::Spot
            | Capacity::Reserved1y
            | Capacity::Reserved3y
            | Capacity::CapacityReservation => false,
        }
    }
    /// Capacity paid for whether used or not.
    pub(crate) fn is_committed(self) -> bool {
        matches!(
            self,
            Capacity::Reserved1y
                | Capacity::Reserved3y
                | Capacity::CapacityReservation
                | Capacity::CapacityBlock
        )
    }
}

/// A calendar date (proleptic Gregorian), for decisions, expiries and data ages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    pub year: i32,
    pub month: u8,
    pub day: u8,
}

impl Date {
    pub(crate) fn new(year: i32, month: u8, day: u8) -> Option<Date> {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        (1..=days)
            .contains(&day)
            .then_some(Date { year, month, day })
    }

    /// `YYYY-MM-DD`.
    pub fn parse(s: &str) -> Option<Date> {
        let mut it = s.trim().splitn(3, '-');
        let y = it.next()?.parse().ok()?;
        let m = it.next()?.parse().ok()?;
        let d = it.next()?.parse().ok()?;
        Date::new(y, m, d)
    }

    /// Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    pub(crate) fn days(self) -> i64 {
        let (m, d) = (i64::from(self.month), i64::from(self.day));
        let y = i64::from(self.year) - i64::from(m <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    pub(crate) fn from_days(z: i64) -> Date {
        let z = z + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
        Date { year, month, day }
    }

    /// Today in UTC, or `GPUPLAN_TODAY` (YYYY-MM-DD) so runs can be reproduced.
    pub fn today() -> Date {
        if let Some(d) = std::env::var("GPUPLAN_TODAY")
            .ok()
            .and_then(|s| Date::parse(&s))
        {
            return d;
        }
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Date::from_days(i64::try_from(secs / 86_400).unwrap_or(0))
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}
