#include "crucible/storage/sigv4.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace crucible::storage {
namespace {

using ::testing::HasSubstr;

// The examples of the Amazon S3 API reference, "Signature Calculations for
// the Authorization Header: Transferring Payload in a Single Chunk".
S3Credentials example_credentials() {
  return {"AKIAIOSFODNN7EXAMPLE", Secret("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"), ""};
}
constexpr const char* kEmptySha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string signature_of(const std::string& authorization) {
  return authorization.substr(authorization.rfind('=') + 1);
}

TEST(SigV4, AwsExampleGetObject) {
  SigV4Request r;
  r.method = "GET";
  r.host = "examplebucket.s3.amazonaws.com";
  r.path = "/test.txt";
  r.headers = {{"Range", "bytes=0-9"}, {"x-amz-content-sha256", kEmptySha}, {"x-amz-date", "20130524T000000Z"}};
  r.payload_sha256 = kEmptySha;
  std::string auth = sigv4_authorization(r, example_credentials(), "us-east-1", "20130524T000000Z");
  EXPECT_EQ(signature_of(auth), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_THAT(auth, HasSubstr("Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"));
  EXPECT_THAT(auth, HasSubstr("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date"));
}

TEST(SigV4, AwsExamplePutObject) {
  SigV4Request r;
  r.method = "PUT";
  r.host = "examplebucket.s3.amazonaws.com";
  r.path = "/test$file.text";
  std::string payload_hash = sha256_hex("Welcome to Amazon S3.");
  EXPECT_EQ(payload_hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  r.headers = {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
               {"x-amz-date", "20130524T000000Z"},
               {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
               {"x-amz-content-sha256", payload_hash}};
  r.payload_sha256 = payload_hash;
  EXPECT_EQ(signature_of(sigv4_authorization(r, example_credentials(), "us-east-1", "20130524T000000Z")),
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST(SigV4, AwsExampleGetBucketLifecycle) {
  SigV4Request r;
  r.method = "GET";
  r.host = "examplebucket.s3.amazonaws.com";
  r.path = "/";
  r.query = {{"lifecycle", ""}};
  r.headers = {{"x-amz-date", "20130524T000000Z"}, {"x-amz-content-sha256", kEmptySha}};
  r.payload_sha256 = kEmptySha;
  EXPECT_EQ(signature_of(sigv4_authorization(r, example_credentials(), "us-east-1", "20130524T000000Z")),
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(SigV4, AwsExampleListObjects) {
  SigV4Request r;
  r.method = "GET";
  r.host = "examplebucket.s3.amazonaws.com";
  r.path = "/";
  r.query = {{"prefix", "J"}, {"max-keys", "2"}};
  r.headers = {{"x-amz-date", "20130524T000000Z"}, {"x-amz-content-sha256", kEmptySha}};
  r.payload_sha256 = kEmptySha;
  EXPECT_THAT(sigv4_canonical_request(r), HasSubstr("\nmax-keys=2&prefix=J\n"));  // sorted
  EXPECT_EQ(signature_of(sigv4_authorization(r, example_credentials(), "us-east-1", "20130524T000000Z")),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4, UriEncoding) {
  EXPECT_EQ(uri_encode("a b/c~d", true), "a%20b/c~d");
  EXPECT_EQ(uri_encode("a/b", false), "a%2Fb");
  EXPECT_EQ(uri_encode("$+=", false), "%24%2B%3D");
}

}  // namespace
}  // namespace crucible::storage
