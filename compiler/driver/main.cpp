// tessel command-line entry point (placeholder until the driver lands).
#include <cstdio>
int main() {
  std::puts("tessel: driver not built yet");
  return 2;
}
