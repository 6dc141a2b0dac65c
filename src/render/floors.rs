//! The oldest provider release the rendered Terraform works with, read from the file itself:
//! each argument of the cloud's [`TerraformFloors`] that the file uses raises the floor to
//! the release that added it. Reading the file rather than the pools keeps the floor true of
//! a custom template too.

use crate::cloud::TerraformFloors;

/// The floor for a rendered file `hcl`.
pub fn floor(floors: &TerraformFloors, hcl: &str) -> String {
    let mut best = floors.baseline;
    for (argument, version, _) in floors.newer {
        if uses(hcl, argument) && newer(version, best) {
            best = version;
        }
    }
    best.to_owned()
}

/// Whether `hcl` names `argument` outside a comment: set (`gpu_driver = "None"`) or read
/// (`data.x.efa_maximum_interfaces`), as a whole identifier.
pub fn uses(hcl: &str, argument: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    hcl.lines()
        .map(|l| {
            let code = l.split("//").next().unwrap_or_default();
            code.split('#').next().unwrap_or_default()
        })
        .any(|code| {
            code.match_indices(argument).any(|(i, _)| {
                let before = code[..i].chars().next_back();
                let after = code[i + argument.len()..].chars().next();
                !before.is_some_and(ident) && !after.is_some_and(ident)
            })
        })
}

/// Whether dotted version `a` is above `b`.
pub fn newer(a: &str, b: &str) -> bool {
    let parse = |v: &str| -> Vec<u32> { v.split('.').filter_map(|x| x.parse().ok()).collect() };
    parse(a) > parse(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Provider;

    fn floors(p: Provider) -> &'static TerraformFloors {
        &crate::cloud::profile(p).render.terraform_floors
    }

    #[test]
    fn floors_rise_only_for_what_is_used() {
        let azure = floors(Provider::Azure);
        assert_eq!(floor(azure, "auto_scaling_enabled = true\n"), "4.0");
        assert_eq!(floor(azure, "  gpu_driver = \"None\"\n"), "4.40");
        let aws = floors(Provider::Aws);
        assert_eq!(
            floor(
                aws,
                "for_each = range(data.aws_ec2_instance_type.a.efa_maximum_interfaces)\n"
            ),
            "5.84"
        );
        assert!(newer("4.40", "4.9") && !newer("5.80", "5.84"));
    }

    #[test]
    fn a_comment_or_a_longer_name_is_not_a_use() {
        assert!(!uses("# gpu_driver = \"None\"\n", "gpu_driver"));
        assert!(!uses("x = 1 // gpu_driver\n", "gpu_driver"));
        assert!(!uses("gpu_driver_version = 1\n", "gpu_driver"));
        assert!(!uses("my_gpu_driver = 1\n", "gpu_driver"));
        assert!(uses("gpu_driver=\"None\"\n", "gpu_driver"));
    }
}
