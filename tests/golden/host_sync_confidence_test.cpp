// SYN001 and PLC001 on their samples: what the finding's confidence and evidence say,
// where the golden test only checks where findings are. A per-step read whose value only
// reaches a print is reported below the default --min-confidence, with the reason.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "sample_findings.h"

namespace mlsem {
namespace {

using test_support::everything;
using test_support::SampleFindings;


bool says(const Finding& f, const std::string& words) {
  for (const Evidence& e : f.evidence)
    if (e.present && e.text.find(words) != std::string::npos) return true;
  return false;
}

TEST(HostSyncConfidence, ReadsOnlyPrintedEachStepAreBelowTheDefaultThreshold) {
  SampleFindings a = test_support::analyze_sample("samples/python/host_sync_guards.py", everything());
  // Both reads of the step are doubted for the same reasons: one finding, the second
  // place a related location of the first.
  for (const char* marker : {"D_x = netD(real).mean().item()", "Loss_D {errD.item()"}) {
    const Finding* f = test_support::finding_or_related_at(a, "SYN001", marker);
    ASSERT_NE(f, nullptr) << marker;
    EXPECT_LT(f->confidence, 0.5) << marker;
    EXPECT_TRUE(says(*f, "progress bar")) << marker;
  }
  // Collected into a dict that a metrics logger logs on every step: the same.
  const Finding* logged = test_support::finding_at(a, "SYN001", "logs = {\"loss\": accelerator.gather(loss)");
  ASSERT_NE(logged, nullptr);
  EXPECT_LT(logged->confidence, 0.5);
  EXPECT_TRUE(says(*logged, "logged"));
  // A read in a step that already waits for the GPU (a non-finite-loss abort, an AMP
  // scaler's step, a barrier) removes no wait when deferred alone.
  for (const char* marker : {"losses.append(loss.detach().float().item())", "history.append(loss.item())"}) {
    const Finding* f = test_support::finding_at(a, "SYN001", marker);
    ASSERT_NE(f, nullptr) << marker;
    EXPECT_LT(f->confidence, 0.5) << marker;
    EXPECT_TRUE(says(*f, "already waits for the GPU")) << marker;
  }
  // A read that is accumulated for the epoch's report, in a step with no other wait, keeps
  // its confidence.
  const Finding* kept = test_support::finding_at(a, "SYN001", "total += loss.item()");
  ASSERT_NE(kept, nullptr);
  EXPECT_GE(kept->confidence, 0.5);
  EXPECT_FALSE(says(*kept, "progress bar"));
  EXPECT_FALSE(says(*kept, "already waits"));
}

TEST(HostSyncConfidence, RandomFactoriesSayTheStreamChanges) {
  SampleFindings a = test_support::analyze_sample("samples/python/host_tensor_placement.py", everything());
  const Finding* noise = test_support::finding_at(a, "PLC001", "noise = torch.randn(x.shape).to(device)");
  ASSERT_NE(noise, nullptr);
  EXPECT_TRUE(says(*noise, "CUDA generator"));
  const Finding* arange = test_support::finding_at(a, "PLC001", "positions = torch.arange(x.shape[1]).cuda()");
  ASSERT_NE(arange, nullptr);
  EXPECT_FALSE(says(*arange, "CUDA generator"));
  EXPECT_GT(arange->confidence, noise->confidence);
}

// A read in a step that waits for the GPU anyway (a blocking batch copy, a boolean-mask
// index, a per-step print) falls below the default and says why; the same read in a step
// that copies with non_blocking=True and shows nothing keeps its confidence.
TEST(HostSyncConfidence, ReadsInStepsThatWaitAnywaySayWhy) {
  SampleFindings a = test_support::analyze_sample("samples/python/host_sync_step_waits.py", everything());
  const Finding* quiet = test_support::finding_at(a, "SYN001", "epoch_loss += loss.item()  # expect");
  ASSERT_NE(quiet, nullptr);
  EXPECT_GE(quiet->confidence, 0.5);
  EXPECT_FALSE(says(*quiet, "already waits"));
  for (const char* marker : {"total += loss.item()  # ok", "l1 += loss.item()"}) {
    const Finding* f = test_support::finding_at(a, "SYN001", marker);
    ASSERT_NE(f, nullptr) << marker;
    EXPECT_LT(f->confidence, 0.5) << marker;
    EXPECT_TRUE(says(*f, "already waits for the GPU")) << marker;
  }
  const Finding* printed = test_support::finding_at(a, "SYN001", "epoch_loss += loss.item()  # ok");
  ASSERT_NE(printed, nullptr);
  EXPECT_TRUE(says(*printed, "also prints or shows"));
}

TEST(HostSyncConfidence, EmptyBatchFallbacksAreBelowTheDefault) {
  SampleFindings a = test_support::analyze_sample("samples/python/host_tensor_placement.py", everything());
  const Finding* fallback = test_support::finding_at(a, "PLC001", "loss = torch.tensor(0).to(logits)");
  ASSERT_NE(fallback, nullptr);
  EXPECT_LT(fallback->confidence, 0.5);
  EXPECT_TRUE(says(*fallback, "runs only when a tensor is empty"));
  const Finding* usual = test_support::finding_at(a, "PLC001", "weight = torch.ones(logits.shape[-1]).to(logits)");
  ASSERT_NE(usual, nullptr);
  EXPECT_FALSE(says(*usual, "runs only when a tensor is empty"));
}

// Two reads of one step are one problem (the first drains the queue; the second then waits
// on nothing): one finding at the first, the second a related location. A tensor built
// only for an empty batch, doubted for a reason of its own, is not joined to the usual
// path's finding in the same forward.
TEST(HostSyncConfidence, PlacesOfOneStepAreOneFinding) {
  SampleFindings a = test_support::analyze_sample("samples/python/host_sync_step_waits.py", everything());
  const char* second = "total += float(scale.factor * loss.item())";
  EXPECT_EQ(test_support::finding_at(a, "SYN001", second), nullptr);
  const Finding* first = test_support::finding_or_related_at(a, "SYN001", second);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->range.begin.line + 1, test_support::line_of(a.text, second));
  bool related = false;
  for (const Evidence& e : first->evidence)
    related |= e.related && e.text.find("another read from the GPU in the same step") != std::string::npos;
  EXPECT_TRUE(related);

  SampleFindings b = test_support::analyze_sample("samples/python/host_tensor_placement.py", everything());
  const Finding* usual = test_support::finding_at(b, "PLC001", "weight = torch.ones(logits.shape[-1]).to(logits)");
  const Finding* fallback = test_support::finding_at(b, "PLC001", "loss = torch.tensor(0).to(logits)");
  ASSERT_NE(usual, nullptr);
  ASSERT_NE(fallback, nullptr);
  EXPECT_NE(usual, fallback);
  for (const Evidence& e : usual->evidence) EXPECT_FALSE(e.related && e.range.begin.line == fallback->range.begin.line);
  // The two sides of an if/else are two findings.
  const Finding* then_side = test_support::finding_at(b, "PLC001", "t = torch.sigmoid(torch.randn((x.size(0),)).to(x.device))");
  const Finding* else_side = test_support::finding_at(b, "PLC001", "t = torch.rand((x.size(0),)).to(x.device)");
  ASSERT_NE(then_side, nullptr);
  ASSERT_NE(else_side, nullptr);
  EXPECT_NE(then_side, else_side);
}

// A filled tensor copied right after a blocking copy of host data waits on nothing; a
// copy with non_blocking=True does not wait. Both fall below the default and say why; a
// random tensor right after a batch copy keeps its confidence (the host draws it slowly).
TEST(HostSyncConfidence, CopiesThatWaitOnNothingSayWhy) {
  SampleFindings a = test_support::analyze_sample("samples/python/host_tensor_placement.py", everything());
  for (const auto& [marker, why] : std::vector<std::pair<std::string, std::string>>{
           {"mask = torch.ones(feats.shape[:-1]", "already copies host data to the GPU and waits"},
           {"pos = torch.arange(tokens.shape[1]).to(tokens.device, non_blocking=True)", "passes non_blocking=True"},
           {"fill_(next_word.item()).to(device)", "reads back from the GPU"}}) {
    const Finding* f = test_support::finding_at(a, "PLC001", marker);
    ASSERT_NE(f, nullptr) << marker;
    EXPECT_LT(f->confidence, 0.5) << marker;
    EXPECT_TRUE(says(*f, why)) << marker;
  }
  const Finding* noise = test_support::finding_at(a, "PLC001", "noise = torch.randn(x.shape).to(device)");
  ASSERT_NE(noise, nullptr);
  EXPECT_GE(noise->confidence, 0.5);
  EXPECT_FALSE(says(*noise, "already copies host data"));
}

}  // namespace
}  // namespace mlsem
