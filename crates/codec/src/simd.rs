//! Hot loops built twice, for baseline x86-64 and for AVX2 (every x86
//! server CPU since 2013), picked at run time.
//!
//! The binary targets baseline x86-64 (SSE2), where a packed float division
//! handles two lanes. A few loops are bound by divisions that must stay
//! divisions to match Prometheus bit for bit (`m / 10^scale`, the `rate`
//! extrapolation), and AVX2 does four per instruction. IEEE division,
//! multiplication and addition give the same bits at any vector width, and
//! Rust never fuses a multiply and an add on its own (FMA is not enabled
//! either), so the AVX2 build computes exactly what the baseline one does.
//! (Building the bit-coded residual decoder with LZCNT and BMI2 the same way
//! did not make it faster: its dependency chain bounds it.)

/// Defines a free function whose body is compiled twice, once with AVX2
/// enabled; each call runs that build when the CPU has AVX2 (a cached
/// check). Arguments are `name: Type` pairs.
#[macro_export]
macro_rules! avx2_kernel {
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
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    #[allow(unsafe_code)]
                    // SAFETY: `avx2` requires only AVX2, which the CPU has.
                    return unsafe { avx2($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}

#[cfg(test)]
mod tests {
    crate::avx2_kernel! {
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
