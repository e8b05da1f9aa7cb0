// Linked with the whole archive of one layer and only the layers it declares (cmake/layers.cmake): the link
// fails when the layer calls into a layer above it.
int main() {
  return 0;
}
