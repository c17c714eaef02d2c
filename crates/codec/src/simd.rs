//! Hot loops built twice, for baseline x86-64 and for x86-64-v3 (AVX2,
//! BMI1, BMI2, LZCNT: every x86 server CPU since 2013), picked at run time.
//!
//! The binary targets baseline x86-64 (SSE2). There a packed float division
//! handles two lanes, and counting leading bits takes `bsr` plus a fix-up.
//! A few loops are bound by exactly these: divisions that must stay
//! divisions to match Prometheus bit for bit (`m / 10^scale`, the `rate`
//! extrapolation), where AVX2 does four per instruction, and the Rice
//! decoder, whose every code waits on counting the previous one's bits,
//! where LZCNT and BMI2's shifts shorten the chain. IEEE division,
//! multiplication and addition give the same bits at any vector width, and
//! Rust never fuses a multiply and an add on its own (FMA is not enabled
//! either), so both builds compute exactly the same.

/// Defines a free function whose body is compiled twice, once with the
/// x86-64-v3 features above enabled; each call runs that build when the CPU
/// has them (a cached check). Arguments are `name: Type` pairs.
#[macro_export]
macro_rules! v3_kernel {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body

            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt")]
                fn v3($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("bmi1")
                    && std::arch::is_x86_feature_detected!("bmi2")
                    && std::arch::is_x86_feature_detected!("lzcnt")
                {
                    #[allow(unsafe_code)]
                    // SAFETY: `v3` requires only the features just checked.
                    return unsafe { v3($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}

#[cfg(test)]
mod tests {
    crate::v3_kernel! {
        /// Bit patterns of `a / b`, lane by lane.
        fn quotients(a: &[f64], b: &[f64], out: &mut Vec<u64>) {
            out.extend(a.iter().zip(b).map(|(x, y)| (x / y).to_bits()));
        }
    }

    #[test]
    fn both_builds_divide_alike() {
        let a: Vec<f64> = (1..1000).map(|i| i as f64 * 1.37).collect();
        let b: Vec<f64> = (1..1000).map(|i| 1000.0 - i as f64 / 3.0).collect();
        let mut got = Vec::new();
        quotients(&a, &b, &mut got);
        let want: Vec<u64> = a.iter().zip(&b).map(|(x, y)| (x / y).to_bits()).collect();
        assert_eq!(got, want);
    }
}
