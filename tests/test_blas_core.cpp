// The judgement of OpenBLAS's kernel choice (experiments/run/blas_core.h).

#include "run/blas_core.h"

#include <gtest/gtest.h>

namespace pln::exp {
namespace {

TEST(BlasCore, CoreNamesHaveTheirTiersInAnyCase) {
  EXPECT_EQ(openblas_core_tier("Prescott"), VectorTier::kSse);
  EXPECT_EQ(openblas_core_tier("NEHALEM"), VectorTier::kSse);
  EXPECT_EQ(openblas_core_tier("Sandybridge"), VectorTier::kAvx);
  EXPECT_EQ(openblas_core_tier("Zen"), VectorTier::kAvx2);
  EXPECT_EQ(openblas_core_tier("Haswell"), VectorTier::kAvx2);
  EXPECT_EQ(openblas_core_tier("Cooperlake"), VectorTier::kAvx512);
  EXPECT_EQ(openblas_core_tier("skylakex"), VectorTier::kAvx512);
  EXPECT_EQ(openblas_core_tier("Neoversen1"), VectorTier::kUnknown);
  EXPECT_EQ(openblas_core_tier(""), VectorTier::kUnknown);
}

TEST(BlasCore, EachTierHasACoreThatOpenBlasRanksThere) {
  for (VectorTier tier : {VectorTier::kAvx, VectorTier::kAvx2, VectorTier::kAvx512}) {
    EXPECT_EQ(openblas_core_tier(openblas_core_for(tier)), tier) << to_string(tier);
  }
  EXPECT_EQ(openblas_core_for(VectorTier::kSse), "");
}

TEST(BlasCore, SseKernelsOnAnAvx512CpuAreReplaced) {
  // The case seen on a Xeon that OpenBLAS 0.3.21 did not know.
  const auto verdict = judge_blas_core("Prescott", VectorTier::kAvx512, nullptr, nullptr);
  EXPECT_EQ(verdict.replacement, "SkylakeX");
  EXPECT_EQ(judge_blas_core("Nehalem", VectorTier::kAvx2, nullptr, nullptr).replacement, "Haswell");
  EXPECT_EQ(judge_blas_core("Sandybridge", VectorTier::kAvx512, nullptr, nullptr).replacement, "SkylakeX");
}

TEST(BlasCore, KernelsOneTierBelowAreKeptWithANote) {
  const auto verdict = judge_blas_core("Haswell", VectorTier::kAvx512, nullptr, nullptr);
  EXPECT_EQ(verdict.replacement, "");
  EXPECT_NE(verdict.note.find("OpenBLAS chose its Haswell kernels (AVX2) for this AVX-512 CPU"), std::string::npos)
      << verdict.note;
  EXPECT_NE(verdict.note.find("OPENBLAS_CORETYPE=SkylakeX"), std::string::npos) << verdict.note;
}

TEST(BlasCore, KernelsAtTheCpusTierOrUnknownAreLeftAlone) {
  for (const char* core : {"Zen", "Haswell", "Cooperlake"}) {
    const auto verdict = judge_blas_core(core, VectorTier::kAvx2, nullptr, nullptr);
    EXPECT_EQ(verdict.replacement, "") << core;
    EXPECT_EQ(verdict.note, "") << core;
  }
  EXPECT_EQ(judge_blas_core("Neoversen1", VectorTier::kAvx512, nullptr, nullptr).replacement, "");
  EXPECT_EQ(judge_blas_core("", VectorTier::kAvx512, nullptr, nullptr).replacement, "");  // not OpenBLAS
}

TEST(BlasCore, TheUsersCoreTypeWins) {
  const auto verdict = judge_blas_core("Prescott", VectorTier::kAvx512, "Prescott", nullptr);
  EXPECT_EQ(verdict.replacement, "");
  EXPECT_NE(verdict.note.find("as OPENBLAS_CORETYPE=Prescott asks"), std::string::npos) << verdict.note;
  EXPECT_EQ(judge_blas_core("SkylakeX", VectorTier::kAvx512, "SkylakeX", nullptr).note, "");
}

TEST(BlasCore, AReplacementIsRecordedWithWhatOpenBlasHadChosen) {
  const auto verdict = judge_blas_core("SkylakeX", VectorTier::kAvx512, "SkylakeX", "Prescott");
  EXPECT_EQ(verdict.replacement, "");
  EXPECT_EQ(verdict.note,
            "OpenBLAS chose its Prescott kernels (SSE) for this AVX-512 CPU; pln set OPENBLAS_CORETYPE=SkylakeX");
}

TEST(BlasCore, ThisCpuHasATier) { EXPECT_NE(cpu_tier(), VectorTier::kUnknown); }

}  // namespace
}  // namespace pln::exp
