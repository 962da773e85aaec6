/*
 * checksum.c -- the page hash, the page checksum made from it, and the
 * all-zero test (definition in format.h, "The page hash"; contracts in
 * checksum.h and decode.h; docs/engine.md, Pages and checksums).
 *
 * The checksum covers bytes [8, page_size) of the page: every byte except
 * the ph_checksum field itself, which is left out rather than copied and
 * zeroed (word 0 is never summed).  The seed binds the page to its place
 * (P4): the same bytes written to another block, or another paged file,
 * hash differently, so a misdirected write fails the checksum with
 * 2^-64-class odds.  There is one paged file today ("data", file id 0),
 * so the seed is the block number; blocks are u32 on disk, so the top byte
 * is free for up to 256 paged files.  The result is never 0: 0 in
 * ph_checksum means "not set" (checksums off).
 *
 * Why a carry-less multilinear hash rather than XXH3: it is linear and
 * keyed by position, so the page's sum is the xor of the sums of spans
 * that tile it, and the pass that checks a page read from disk hands the
 * per key-value codes the sum of every cell on the way (checksum.h,
 * cs_spans).  Strength: with independent uniform keys, a fixed non-zero
 * change to the words changes S by a non-zero amount except with odds
 * 2^-64 (the word with a change is multiplied by its own key in a field);
 * the keys are fixed, so a change pattern either always or never cancels,
 * and the share of patterns that do is 2^-64.  The low-weight ones are
 * checked: no one- or two-bit change anywhere in a page cancels
 * (tests/test_page_hash_is_one_pass.c).  fmix64 after it (a bijection)
 * and the block's own mixed seed keep a misdirected page failing.
 *
 * Speed: AVX-512 VPCLMULQDQ takes 64 bytes a step (two instructions of
 * four carry-less products each); bench/README.md has its time per page
 * against XXH3 and the CRC.  PCLMULQDQ (any x86-64 since 2010) takes 16;
 * the portable C path multiplies in software, a nibble at a time.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#define CS_X86 1
#else
#define CS_X86 0
#endif

#include "checksum.h"
#include "page.h"

/* The data file's id in the seed (format.h: PAGE_SEED_FILE_SHIFT). */
#define SEED_FILE_DATA 0u

/* The keys (a step of 8 words reads 8 of them, aligned). */
uint64_t cs_keys[PAGE_HASH_KEYS] __attribute__((aligned(64)));
#define keys cs_keys
int cs_impl_chosen = -1;
#define impl cs_impl_chosen
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void cs_init(void) {
    uint64_t x = PAGE_HASH_KEY_SEED;
    for (unsigned j = 0; j < PAGE_HASH_KEYS; j++) {
        /* splitmix64 */
        uint64_t z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        keys[j] = z ^ (z >> 31);
    }
    int best = CS_IMPL_SCALAR;
    for (int i = CS_IMPL_AVX512; i > CS_IMPL_SCALAR && best == CS_IMPL_SCALAR; i--)
        if (cs_have_impl(i)) best = i;
    __atomic_store_n(&impl, best, __ATOMIC_RELEASE);
}

static inline int impl_now(void) {
    int i = __atomic_load_n(&impl, __ATOMIC_ACQUIRE);
    if (i >= 0) return i;
    pthread_once(&init_once, cs_init);
    return __atomic_load_n(&impl, __ATOMIC_ACQUIRE);
}

int cs_have_impl(int which) {
#if CS_X86
    __builtin_cpu_init();
    if (which == CS_IMPL_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("vpclmulqdq") &&
               __builtin_cpu_supports("popcnt");
    if (which == CS_IMPL_PCLMUL) return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
    return which == CS_IMPL_SCALAR;
}

int cs_impl(void) { return impl_now(); }

int cs_set_impl(int which) {
    int before = impl_now();
    __atomic_store_n(&impl, which, __ATOMIC_RELEASE);
    return before;
}

uint64_t cs_key(unsigned j) {
    impl_now();
    return j < PAGE_HASH_KEYS ? keys[j] : 0;
}

/* ---- the arithmetic ------------------------------------------------------------ */

/* The 128-bit carry-less product of A and B in plain C, a nibble of A at
 * a time against the 16 multiples of B. */
static void clmul_sw(uint64_t a, uint64_t b, uint64_t *lo, uint64_t *hi) {
    uint64_t tl[16], th[16];
    tl[0] = th[0] = 0;
    for (unsigned i = 1; i < 16; i++) {
        unsigned s = 31 - (unsigned)__builtin_clz(i); /* top bit of i */
        uint64_t bl = b << s, bh = s ? b >> (64 - s) : 0;
        tl[i] = tl[i ^ (1u << s)] ^ bl;
        th[i] = th[i ^ (1u << s)] ^ bh;
    }
    uint64_t l = 0, h = 0;
    for (int k = 60; k >= 0; k -= 4) {
        h = h << 4 | l >> 60;
        l <<= 4;
        unsigned nib = (unsigned)(a >> k) & 15u;
        l ^= tl[nib];
        h ^= th[nib];
    }
    *lo = l;
    *hi = h;
}

uint64_t cs_gf_mul(uint64_t a, uint64_t b) {
    uint64_t lo, hi;
    clmul_sw(a, b, &lo, &hi);
    return cs_gf_reduce(lo, hi);
}

/* Word J of PAGE, little-endian, with its bytes outside [LO, HI) zero. */
static inline uint64_t word_in(const uint8_t *page, uint32_t j, uint32_t lo, uint32_t hi) {
    uint64_t d;
    memcpy(&d, page + 8u * j, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    d = __builtin_bswap64(d);
#endif
    if (j == lo >> 3) d &= ~0ull << (8 * (lo & 7));
    if (j == (hi - 1) >> 3 && (hi & 7)) d &= (1ull << (8 * (hi & 7))) - 1;
    return d;
}

static uint64_t span_scalar(const uint8_t *page, uint32_t lo, uint32_t hi, unsigned *par) {
    uint64_t L = 0, H = 0, x = 0;
    for (uint32_t j = lo >> 3; lo < hi && j <= (hi - 1) >> 3; j++) {
        uint64_t d = word_in(page, j, lo, hi), l, h;
        clmul_sw(d, keys[j], &l, &h);
        L ^= l;
        H ^= h;
        x ^= d;
    }
    if (par) *par = cs_parity64(x);
    return cs_gf_reduce(L, H);
}

#if CS_X86
#define TARGET_PCLMUL __attribute__((target("pclmul,sse4.1")))
#define TARGET_512    CS_TARGET_512

/* 16 bytes a step: the first and last words alone (masked), the words
 * between them in pairs. */
TARGET_PCLMUL static uint64_t span_pclmul(const uint8_t *page, uint32_t lo, uint32_t hi, unsigned *par) {
    if (lo >= hi) {
        if (par) *par = 0;
        return 0;
    }
    uint32_t j = lo >> 3, last = (hi - 1) >> 3;
    __m128i acc = _mm_setzero_si128(), x = acc;
    for (;;) {
        /* an edge word (the first, the last) */
        __m128i d = _mm_cvtsi64_si128((long long)word_in(page, j, lo, hi));
        acc = _mm_xor_si128(acc, _mm_clmulepi64_si128(d, _mm_cvtsi64_si128((long long)keys[j]), 0x00));
        x = _mm_xor_si128(x, d);
        if (j++ == last) break;
        for (; j + 1 < last; j += 2) {
            __m128i e = _mm_loadu_si128((const __m128i *)(page + 8u * j));
            __m128i k = _mm_loadu_si128((const __m128i *)(keys + j));
            acc = _mm_xor_si128(acc, _mm_xor_si128(_mm_clmulepi64_si128(e, k, 0x00), _mm_clmulepi64_si128(e, k, 0x11)));
            x = _mm_xor_si128(x, e);
        }
        while (j < last) { /* one word left before the last */
            d = _mm_cvtsi64_si128((long long)word_in(page, j, lo, hi));
            acc = _mm_xor_si128(acc, _mm_clmulepi64_si128(d, _mm_cvtsi64_si128((long long)keys[j]), 0x00));
            x = _mm_xor_si128(x, d);
            j++;
        }
    }
    if (par) *par = cs_parity64((uint64_t)_mm_cvtsi128_si64(x) ^ (uint64_t)_mm_extract_epi64(x, 1));
    return cs_gf_reduce((uint64_t)_mm_cvtsi128_si64(acc), (uint64_t)_mm_extract_epi64(acc, 1));
}

TARGET_512 static uint64_t span_avx512(const uint8_t *page, uint32_t lo, uint32_t hi, unsigned *par) {
    return cs_span_512(page, lo, hi, par);
}
#endif

typedef uint64_t (*span_fn)(const uint8_t *, uint32_t, uint32_t, unsigned *);

static span_fn span_of(int which) {
#if CS_X86
    if (which == CS_IMPL_AVX512) return span_avx512;
    if (which == CS_IMPL_PCLMUL) return span_pclmul;
#endif
    (void)which;
    return span_scalar;
}

uint64_t cs_span_impl(int which, const uint8_t *page, uint32_t lo, uint32_t hi, unsigned *parity) {
    impl_now();
    return span_of(which)(page, lo, hi, parity);
}

uint64_t cs_span(const uint8_t *page, uint32_t lo, uint32_t hi, unsigned *parity) {
    return span_of(impl_now())(page, lo, hi, parity);
}

/* ---- the checksum ---------------------------------------------------------------- */

uint64_t cs_checksum_of(uint64_t s, const uint8_t *page, size_t ps, uint64_t block) {
#ifdef ENG_BROKEN_CHECKSUM_SKIPS_LAST_BYTE
    /* planted bug (tests/mutants.txt): the hashed length is off by one,
     * so the last byte of the page (the tail of the first cell put in a
     * leaf) is not covered and a flip there passes the checksum. */
    s ^= cs_span(page, (uint32_t)ps - 1, (uint32_t)ps, NULL);
#else
    (void)page;
    (void)ps;
#endif
    uint64_t seed = ((uint64_t)SEED_FILE_DATA << PAGE_SEED_FILE_SHIFT) ^ block;
    uint64_t h = cs_fmix64(s ^ cs_fmix64(seed ^ PAGE_HASH_SEED_MIX));
    return h ? h : 1;
}

uint64_t page_checksum(const uint8_t *page, size_t page_size, uint64_t block) {
#ifdef ENG_BROKEN_CHECKSUM_SKIPS_PAGE_LSN
    /* planted bug (tests/mutants.txt): the hashed range starts past the
     * page LSN as well as the checksum (both are stamped on the copy right
     * before the write, so both were left out): a page whose LSN was
     * damaged on disk passes its checksum, and its frame takes the wrong
     * LSN as its own, so redo skips the page's changes (an LSN raised) or
     * applies them again (lowered), and its first change after a
     * checkpoint may log no image.  (The pool's one-pass check, which
     * sums from byte 8, then fails and the page is hashed again here.) */
    return cs_checksum_of(cs_span(page, PH_LSN_OFF + 8u, (uint32_t)page_size, NULL), page, page_size, block);
#else
    return cs_checksum_of(cs_span(page, PAGE_CHECKSUM_FROM, (uint32_t)page_size, NULL), page, page_size, block);
#endif
}

void page_set_checksum(uint8_t *page, size_t page_size, uint64_t block) {
    ph_set_checksum(page, page_checksum(page, page_size, block));
}

/* ---- one pass: the sums of many spans ------------------------------------------ */

/* The loop of cs_spans with the span function SPAN (a constant where it is
 * inlined, so the AVX-512 kernel is compiled into its caller). */
static inline __attribute__((always_inline)) void spans_with(span_fn span, const uint8_t *page, const uint16_t *off,
                                                             const uint16_t *len, unsigned k, uint64_t *sums,
                                                             uint8_t *pars) {
    for (unsigned i = 0; i < k; i++) {
        unsigned p;
        sums[i] = span(page, off[i], (uint32_t)off[i] + len[i], &p);
        pars[i] = (uint8_t)p;
    }
}

#if CS_X86
TARGET_512 static void spans_avx512(const uint8_t *page, const uint16_t *off, const uint16_t *len, unsigned k,
                                    uint64_t *sums, uint8_t *pars) {
    spans_with(cs_span_512, page, off, len, k, sums, pars);
}
#endif

void cs_spans(const uint8_t *page, const uint16_t *off, const uint16_t *len, unsigned k, uint64_t *sums,
              uint8_t *pars) {
    int which = impl_now();
#if CS_X86
    if (which == CS_IMPL_AVX512) {
        spans_avx512(page, off, len, k, sums, pars);
        return;
    }
#endif
    spans_with(span_of(which), page, off, len, k, sums, pars);
}

/* ---- the all-zero test -------------------------------------------------------- */

/* Comparing the page against itself shifted by one byte lets glibc's
 * vectorized memcmp do the scan: ~50 ns for a zero 4 KiB page, three times
 * faster than a word loop, and a written page differs within its first
 * bytes (checksum, block) so it returns at once. */
int page_is_zero(const uint8_t *page, size_t page_size) {
    if (page_size == 0) return 1;
    return page[0] == 0 && memcmp(page, page + 1, page_size - 1) == 0;
}
