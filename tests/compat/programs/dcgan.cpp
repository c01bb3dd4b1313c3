// A DCGAN-style generator and discriminator (ConvTranspose2d / Conv2d / BatchNorm2d / LeakyReLU)
// trained with nn::BCELoss on 8x8 synthetic images, in the style of libtorch's dcgan example.
#include <torch/torch.h>

struct DCGANGeneratorImpl : torch::nn::Module {
  DCGANGeneratorImpl(int kNoiseSize)
      : conv1(torch::nn::ConvTranspose2dOptions(kNoiseSize, 32, 4).bias(false)),
        batch_norm1(32),
        conv2(torch::nn::ConvTranspose2dOptions(32, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("batch_norm1", batch_norm1);
    register_module("conv2", conv2);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(batch_norm1(conv1(x)));  // 4x4
    return torch::tanh(conv2(x));            // 8x8
  }
  torch::nn::ConvTranspose2d conv1;
  torch::nn::BatchNorm2d batch_norm1;
  torch::nn::ConvTranspose2d conv2;
};
TORCH_MODULE(DCGANGenerator);

int main() {
  torch::manual_seed(3);
  const int kNoiseSize = 16, kBatchSize = 32;
  DCGANGenerator generator(kNoiseSize);
  torch::nn::Sequential discriminator(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 4).stride(2).padding(1).bias(false)),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 1, 4).stride(1).padding(0).bias(false)),
      torch::nn::Sigmoid());

  torch::optim::Adam generator_optimizer(
      generator->parameters(), torch::optim::AdamOptions(1e-3).betas(std::make_tuple(0.5, 0.5)));
  torch::optim::Adam discriminator_optimizer(
      discriminator->parameters(),
      torch::optim::AdamOptions(1e-3).betas(std::make_tuple(0.5, 0.5)));
  torch::nn::BCELoss bce;

  // Real images: a bright vertical bar in a random column.
  auto real_batch = [&] {
    torch::Tensor images = -torch::ones({kBatchSize, 1, 8, 8});
    for (int64_t i = 0; i < kBatchSize; ++i) images[i].select(2, i % 8).fill_(1.0);
    return images;
  };

  float first_d = 0, last_d = 0;
  for (int step = 0; step < 200; ++step) {
    discriminator->zero_grad();
    torch::Tensor real_images = real_batch();
    torch::Tensor real_labels = torch::empty(kBatchSize).uniform_(0.8, 1.0);
    torch::Tensor real_output = discriminator->forward(real_images).reshape(real_labels.sizes());
    torch::Tensor d_loss_real = bce(real_output, real_labels);
    d_loss_real.backward();

    torch::Tensor noise = torch::randn({kBatchSize, kNoiseSize, 1, 1});
    torch::Tensor fake_images = generator->forward(noise);
    torch::Tensor fake_labels = torch::zeros(kBatchSize);
    torch::Tensor fake_output =
        discriminator->forward(fake_images.detach()).reshape(fake_labels.sizes());
    torch::Tensor d_loss_fake = bce(fake_output, fake_labels);
    d_loss_fake.backward();
    torch::Tensor d_loss = d_loss_real + d_loss_fake;
    discriminator_optimizer.step();

    generator->zero_grad();
    fake_labels.fill_(1);
    fake_output = discriminator->forward(fake_images).reshape(fake_labels.sizes());
    torch::Tensor g_loss = bce(fake_output, fake_labels);
    g_loss.backward();
    generator_optimizer.step();

    if (step == 0) first_d = d_loss.item<float>();
    last_d = d_loss.item<float>();
    TORCH_CHECK(std::isfinite(g_loss.item<float>()), "generator loss diverged");
  }
  // A GAN's losses need not fall step by step; what training must give is a discriminator that
  // tells the real bars from the generator's images.
  torch::NoGradGuard no_grad;
  const float real_score = discriminator->forward(real_batch()).mean().item<float>();
  const float fake_score =
      discriminator->forward(generator->forward(torch::randn({kBatchSize, kNoiseSize, 1, 1})))
          .mean()
          .item<float>();
  std::printf("D loss %.4f -> %.4f, D(real) %.3f, D(fake) %.3f\n", first_d, last_d, real_score,
              fake_score);
  return last_d < first_d && real_score > fake_score ? 0 : 1;
}
