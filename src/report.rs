//! Everything gpuplan prints about findings: the human report (miette), `gpuplan.findings/v1`
//! JSON, SARIF 2.1.0, GitHub annotations, JUnit XML, GitLab Code Quality and the Markdown
//! pull-request comment. It sits above
//! [`crate::rules`] because SARIF and the comment name each rule and link its documentation.

pub mod catalog;
pub(crate) mod codequality;
pub(crate) mod diff;
pub mod findings;
pub(crate) mod forecast;
pub(crate) mod github;
pub(crate) mod junit;
pub(crate) mod markdown;
pub(crate) mod method;
pub(crate) mod model;
pub(crate) mod recommend;
pub(crate) mod review;
pub(crate) mod sarif;
pub mod schemas;
pub(crate) mod svg;
pub(crate) mod why;
