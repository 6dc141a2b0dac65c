//! The oldest provider versions the rendered Terraform works with, derived from the arguments
//! it uses: each argument newer than the baseline raises the floor to the release that added
//! it, so `terraform init` never picks a provider that rejects the file.

/// `(provider, argument as it appears in the file, first version with it, source)`.
pub const FLOORS: &[(&str, &str, &str, &str)] = &[
    (
        "azurerm",
        "gpu_driver",
        "4.40",
        "hashicorp/terraform-provider-azurerm CHANGELOG 4.40.0: `gpu_driver` on azurerm_kubernetes_cluster_node_pool",
    ),
    (
        "aws",
        "efa_maximum_interfaces",
        "5.84",
        "hashicorp/terraform-provider-aws CHANGELOG 5.84.0: `efa_maximum_interfaces` on data.aws_ec2_instance_type",
    ),
];

/// The floor with nothing newer in use: azurerm 4.0 (`auto_scaling_enabled`, the 4.x names),
/// aws 5.80.
pub fn baseline(provider: &str) -> &'static str {
    BASELINES
        .iter()
        .find(|(p, _)| *p == provider)
        .map_or("0", |(_, v)| v)
}

/// `(provider, the release whose argument names the template is written for)`.
const BASELINES: &[(&str, &str)] = &[("azurerm", "4.0"), ("aws", "5.80")];

/// The floor for a provider given which of its newer arguments the file uses.
pub fn floor(provider: &str, uses: impl Fn(&str) -> bool) -> String {
    let mut best = baseline(provider).to_owned();
    for (p, arg, version, _) in FLOORS {
        if *p == provider && uses(arg) && newer(version, &best) {
            best = (*version).to_owned();
        }
    }
    best
}

/// Whether dotted version `a` is above `b`.
pub fn newer(a: &str, b: &str) -> bool {
    let parse = |v: &str| -> Vec<u32> { v.split('.').filter_map(|x| x.parse().ok()).collect() };
    parse(a) > parse(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_rise_only_for_what_is_used() {
        assert_eq!(floor("azurerm", |_| false), "4.0");
        assert_eq!(floor("azurerm", |a| a == "gpu_driver"), "4.40");
        assert_eq!(floor("aws", |a| a == "efa_maximum_interfaces"), "5.84");
        assert!(newer("4.40", "4.9") && !newer("5.80", "5.84"));
    }
}
