// roberta: the command-line entry point. The only place (with the server's handlers)
// that catches rc::Error: it prints one line plus a hint and maps errc to an exit code.
#include <cstdio>
int main() { std::puts("roberta: under construction"); return 0; }
