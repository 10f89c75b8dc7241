// Commands that do all their work in one process refuse to be one of several processes started by
// mpirun (each would print the same table and write the same files), with exit 2 and no output
// file. The launch is detected from the launcher's environment, which these tests set for the
// child; a launch of one process (OMPI_COMM_WORLD_SIZE=1) is not refused.
#include <cstdlib>

#include <gtest/gtest.h>

#include "cli_helpers.hpp"

namespace eaglesim::test {
namespace {

class UnderMpirun : public ::testing::Test {
 protected:
  void SetUp() override { setenv("OMPI_COMM_WORLD_SIZE", "2", 1); }
  void TearDown() override { unsetenv("OMPI_COMM_WORLD_SIZE"); }
};

const std::string kTrace = "traces/llama-3.1-8b_tp2_t4.json";

TEST_F(UnderMpirun, OneProcessCommandsRefuseAndWriteNothing) {
  const std::string dir = temp_dir();
  const std::string kineto = std::string(EAGLESIM_TEST_DATA) + "/kineto/llama8b_tp2_t4_nccl_rank0.json.gz";
  struct Case {
    std::string args, command, output;
  } cases[] = {
      {"gen --model models/llm/llama-3.1-8b.json --tp 2 --tokens 4 -o " + dir + "/g.json", "gen", dir + "/g.json"},
      {"inspect " + kTrace, "inspect", ""},
      {"import kineto " + kineto + " --layers 32 -o " + dir + "/i.json", "import kineto", dir + "/i.json"},
      {"sweep --model llama-3.1-8b --topology 2x-h200-nvlink -o " + dir + "/s.csv", "sweep", dir + "/s.csv"},
      {"run " + kTrace + " --topology 2x-h200-nvlink --json " + dir + "/r.json", "run --backend sim",
       dir + "/r.json"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    CliResult r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.command + " uses no GPU and does all its work in one process: start it without mpirun"),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    if (!c.output.empty()) EXPECT_FALSE(file_exists(c.output));
  }
}

TEST_F(UnderMpirun, OneProcessLaunchIsNotRefused) {
  setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  CliResult r = run_cli("inspect " + kTrace);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("allreduce"), std::string::npos) << r.out;
}

TEST_F(UnderMpirun, OtherLaunchersAreRecognisedToo) {
  unsetenv("OMPI_COMM_WORLD_SIZE");
  for (const char* var : {"PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    SCOPED_TRACE(var);
    setenv(var, "4", 1);
    CliResult r = run_cli("inspect " + kTrace);
    unsetenv(var);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("start it without mpirun"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace eaglesim::test
