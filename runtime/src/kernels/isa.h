/*
 * Which instruction set the kernels of this build take, from the compiler's own feature macros
 * (nothing here includes an intrinsics header, so any layer may ask):
 *
 *   TGR_SIMD32_DSP  the Armv7E-M/Armv8-M DSP extension (__ARM_FEATURE_DSP): the default
 *                   cortex-m55+nomve firmware and the M4/M7/M33 boards; simd32.h's packed pairs
 *                   are single instructions there;
 *   TGR_SIMD_MVE    Helium, the M-profile vector extension, integer (__ARM_FEATURE_MVE): the
 *                   `mve=1` firmware (-mcpu=cortex-m55).
 *
 * Neither on the host, whose library takes the portable C form of the DSP kernels. The Helium
 * build has the DSP extension too. Which kernel variant each layer takes in which build:
 * kernels.h and kernels/README.md.
 */
#ifndef TGR_KERNELS_ISA_H
#define TGR_KERNELS_ISA_H

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#define TGR_SIMD32_DSP 1
#else
#define TGR_SIMD32_DSP 0
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#define TGR_SIMD_MVE 1
#else
#define TGR_SIMD_MVE 0
#endif

/* Keeps a variant's hot pass (one group of channels over every output, one pixel's channels) in a
 * function of its own: GCC's register allocation of the inner loops then depends on that pass
 * alone, not on whatever else the variant holds (measured: the same loop took 10 instructions
 * inside one function and 13 to 18 inside another). The pass copies the structs it is handed, so
 * the output stores cannot alias them. */
#if defined(__GNUC__)
#define TGR_NOINLINE __attribute__((noinline))
#else
#define TGR_NOINLINE
#endif

/* v, as far as the optimizer knows, changed: a short copy or fill loop whose stores go through it
 * stays a loop, where GCC would otherwise call memcpy/memset for a few bytes (a call, and its
 * size tests, cost more than the loop). No instruction. */
#if defined(__GNUC__)
#define TGR_OPAQUE(v) __asm__("" : "+r"(v))
#else
#define TGR_OPAQUE(v) ((void)0)
#endif

#endif /* TGR_KERNELS_ISA_H */
