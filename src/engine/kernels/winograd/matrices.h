// The Winograd F(m, 3) matrices for m = 2, 4, 6 (tile alpha = m + 2):
// Y = AT [(G g GT) . (BT d B)] A, one alpha x alpha input tile d and 3x3
// filter g giving an m x m output tile. Interpolation points: F(2,3) 0, +-1,
// inf; F(4,3) 0, +-1, 1/2, -2, inf; F(6,3) 0, +-1, +-2, +-1/2, inf (the
// scaling of ncnn / NNPACK, which keeps the largest output-transform factor
// at 32). F(4,3)'s points are the ones Barabasz et al. ("Error analysis and
// improving the accuracy of Winograd convolution", 2020) found most accurate:
// against the usual 0, +-1, +-2 (ncnn's) they cut the float error of a
// 16-channel layer from 1.3e-6 to 7.4e-7 of the output scale on average
// (worst of 200 tiles 6.3e-6 -> 2.0e-6; F(2,3): 1.6e-7), for about 6 more
// operations per input-transform row. The 1/2 column of AT is scaled by 8
// and BT's rows to small integers, the factors moved into G.
// All entries are exact in float except G's thirds, fifteenths and ninths,
// which the filter transform evaluates in double at load.
#pragma once

namespace qpi {

template <int M>
struct WinoMat;

template <>
struct WinoMat<2> {
  static constexpr int A = 4;
  static constexpr float BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static constexpr double G[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
  static constexpr float AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
};

template <>
struct WinoMat<4> {
  static constexpr int A = 6;
  static constexpr float BT[6][6] = {{2, -3, -4, 3, 2, 0},  {0, -2, 1, 5, 2, 0},  {0, 2, -5, 1, 2, 0},
                                     {0, -2, -1, 2, 1, 0}, {0, 1, -2, -1, 2, 0}, {0, 2, -3, -4, 3, 2}};
  static constexpr double G[6][3] = {{1. / 2, 0, 0},           {1. / 6, 1. / 6, 1. / 6},   {-1. / 6, 1. / 6, -1. / 6},
                                     {-2. / 15, -1. / 15, -1. / 30}, {1. / 30, -1. / 15, 2. / 15}, {0, 0, 1. / 2}};
  static constexpr float AT[4][6] = {{1, 1, 1, 8, 1, 0}, {0, 1, -1, 4, -2, 0}, {0, 1, 1, 2, 4, 0}, {0, 1, -1, 1, -8, 1}};
};

template <>
struct WinoMat<6> {
  static constexpr int A = 8;
  static constexpr float BT[8][8] = {{1, 0, -5.25f, 0, 5.25f, 0, -1, 0},      {0, 1, 1, -4.25f, -4.25f, 1, 1, 0},
                                     {0, -1, 1, 4.25f, -4.25f, -1, 1, 0},      {0, .5f, .25f, -2.5f, -1.25f, 2, 1, 0},
                                     {0, -.5f, .25f, 2.5f, -1.25f, -2, 1, 0},  {0, 2, 4, -2.5f, -5, .5f, 1, 0},
                                     {0, -2, 4, 2.5f, -5, -.5f, 1, 0},         {0, -1, 0, 5.25f, 0, -5.25f, 0, 1}};
  static constexpr double G[8][3] = {{1, 0, 0},
                                     {-2. / 9, -2. / 9, -2. / 9},
                                     {-2. / 9, 2. / 9, -2. / 9},
                                     {1. / 90, 1. / 45, 2. / 45},
                                     {1. / 90, -1. / 45, 2. / 45},
                                     {32. / 45, 16. / 45, 8. / 45},
                                     {32. / 45, -16. / 45, 8. / 45},
                                     {0, 0, 1}};
  static constexpr float AT[6][8] = {{1, 1, 1, 1, 1, 1, 1, 0},
                                     {0, 1, -1, 2, -2, .5f, -.5f, 0},
                                     {0, 1, 1, 4, 4, .25f, .25f, 0},
                                     {0, 1, -1, 8, -8, .125f, -.125f, 0},
                                     {0, 1, 1, 16, 16, .0625f, .0625f, 0},
                                     {0, 1, -1, 32, -32, .03125f, -.03125f, 1}};
};

// U = G g GT for one 3x3 filter, in double, rounded once to float.
template <int M>
void wino_filter(const float* g, float* u) {
  using W = WinoMat<M>;
  constexpr int A = W::A;
  double t[A][3];
  for (int i = 0; i < A; ++i)
    for (int c = 0; c < 3; ++c) t[i][c] = W::G[i][0] * g[c] + W::G[i][1] * g[3 + c] + W::G[i][2] * g[6 + c];
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < A; ++j) u[i * A + j] = float(t[i][0] * W::G[j][0] + t[i][1] * W::G[j][1] + t[i][2] * W::G[j][2]);
}

}  // namespace qpi
