// RpcClient against scripted servers on loopback: retries, deadlines,
// stalls, oversized replies, error mapping and batches.
#include "crucible/chain/rpc_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "crucible/chain/abi.h"
#include "support/scripted_http.h"

namespace crucible::chain {
namespace {

using ::testing::HasSubstr;
using testing::ScriptedHttpServer;
using Ms = std::chrono::milliseconds;

RpcOptions fast(const std::string& url) {
  RpcOptions o;
  o.url = url;
  o.call_timeout = Ms(1500);
  o.backoff_initial = Ms(20);
  o.backoff_max = Ms(50);
  return o;
}

std::string ok_reply(int id, const std::string& result) {
  return "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) + ",\"result\":" + result + "}";
}

TEST(RpcClient, RetriesTransientHttpErrors) {
  ScriptedHttpServer server({{503, "busy", false}, {429, "slow down", false}, {200, ok_reply(1, "\"0x3b1\""), false}});
  RpcClient rpc(fast(server.url()));
  auto r = rpc.call("eth_chainId");
  ASSERT_TRUE(r.is_ok()) << r.status();
  EXPECT_EQ(*r, "0x3b1");
  EXPECT_EQ(server.requests(), 3);
}

TEST(RpcClient, GivesUpAfterMaxAttempts) {
  ScriptedHttpServer server({{502, "bad gateway", false}});
  auto o = fast(server.url());
  o.max_attempts = 3;
  RpcClient rpc(o);
  auto r = rpc.call("eth_chainId");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("HTTP 502"));
  EXPECT_EQ(server.requests(), 3);
}

TEST(RpcClient, ServerDownFailsWithinDeadline) {
  std::string url;
  {
    ScriptedHttpServer gone({{200, "", false}});
    url = gone.url();
  }  // closed: connections are refused now
  RpcClient rpc(fast(url));
  auto start = std::chrono::steady_clock::now();
  auto r = rpc.call("eth_blockNumber");
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(r.is_ok());
  EXPECT_TRUE(r.status().is_transient()) << r.status();
  EXPECT_LT(took, Ms(3000));
}

TEST(RpcClient, StalledServerFailsWithinDeadline) {
  ScriptedHttpServer server({{200, "", true}});
  auto o = fast(server.url());
  o.call_timeout = Ms(600);
  RpcClient rpc(o);
  auto start = std::chrono::steady_clock::now();
  auto r = rpc.call("eth_blockNumber");
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(took, Ms(2500));  // the deadline, not a hang
}

TEST(RpcClient, OversizedReplyIsRefused) {
  ScriptedHttpServer server({{200, ok_reply(1, "\"" + std::string(5000, 'a') + "\""), false}});
  auto o = fast(server.url());
  o.max_response_bytes = 1000;
  RpcClient rpc(o);
  EXPECT_EQ(rpc.call("eth_call").status().code(), StatusCode::kResourceExhausted);
}

TEST(RpcClient, MalformedRepliesAreDataLoss) {
  ScriptedHttpServer server({{200, "this is not json", false}});
  RpcClient rpc(fast(server.url()));
  EXPECT_EQ(rpc.call("eth_chainId").status().code(), StatusCode::kDataLoss);
}

TEST(RpcClient, RevertDataBecomesAReadableReason) {
  Bytes data = abi::encode_call("Error(string)", {abi::Value::string("no validator permit")}).value();
  std::string body =
      R"({"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted: no validator permit","data":")" +
      to_hex(data) + "\"}}";
  ScriptedHttpServer server({{200, body, false}});
  RpcClient rpc(fast(server.url()));
  auto r = rpc.call("eth_estimateGas");
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "eth_estimateGas: execution reverted: no validator permit");
}

TEST(RpcClient, ErrorCodesMap) {
  using nlohmann::json;
  EXPECT_EQ(RpcClient::error_status("m", json{{"code", -32601}, {"message", "nope"}}).code(),
            StatusCode::kUnimplemented);
  EXPECT_EQ(RpcClient::error_status("m", json{{"code", -32602}, {"message", "bad"}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(RpcClient::error_status("m", json{{"code", -32000}, {"message", "nonce too low"}}).message(),
            "m: rpc error -32000: nonce too low");
  EXPECT_THAT(RpcClient::error_status("m", json{{"code", 3}, {"message", "execution reverted"}}).message(),
              HasSubstr("reverted without a reason"));
}

TEST(RpcClient, BatchMatchesRepliesById) {
  // Replies out of order, one an error.
  std::string body = R"([{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"boom"}},)"
                     R"({"jsonrpc":"2.0","id":1,"result":"0x1"},{"jsonrpc":"2.0","id":3,"result":"0x3"}])";
  ScriptedHttpServer server({{200, body, false}});
  RpcClient rpc(fast(server.url()));
  auto r = rpc.batch({{"a", {}}, {"b", {}}, {"c", {}}});
  ASSERT_TRUE(r.is_ok()) << r.status();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].value(), "0x1");
  EXPECT_THAT((*r)[1].status().message(), HasSubstr("boom"));
  EXPECT_EQ((*r)[2].value(), "0x3");
  auto sent = nlohmann::json::parse(server.bodies().at(0));
  EXPECT_TRUE(sent.is_array());
  EXPECT_EQ(sent.size(), 3u);
}

TEST(RpcClient, MissingBatchReplyIsAnErrorForThatCall) {
  ScriptedHttpServer server({{200, R"([{"jsonrpc":"2.0","id":1,"result":"0x1"}])", false}});
  RpcClient rpc(fast(server.url()));
  auto r = rpc.batch({{"a", {}}, {"b", {}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE((*r)[0].is_ok());
  EXPECT_EQ((*r)[1].status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace crucible::chain
